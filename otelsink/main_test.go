package otelsink_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/openaimodel"
	"github.com/polyloop/polyloop/otelsink"
	"github.com/polyloop/polyloop/sqlitestore"
	"github.com/polyloop/polyloop/toolcallparser"
)

// The environment of the test binary run as a first invocation that the
// Jaeger test kills with SIGKILL (jaeger_test.go): the run id, the SQLite
// file, the model's base URL, and the file its action creates before it
// hangs.
const (
	killedRunEnv    = "OTELSINK_TEST_KILLED_RUN"
	killedStoreEnv  = "OTELSINK_TEST_KILLED_STORE"
	killedModelEnv  = "OTELSINK_TEST_KILLED_MODEL"
	killedMarkerEnv = "OTELSINK_TEST_KILLED_MARKER"
)

func TestMain(m *testing.M) {
	if id := os.Getenv(killedRunEnv); id != "" {
		if err := runUntilKilled(id); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runUntilKilled starts run id with a sink from the environment, as the CLI
// does; its action creates the marker and hangs until the process is
// killed, so nothing of the invocation is flushed but what the sink flushed
// on its own.
func runUntilKilled(id string) error {
	ctx := context.Background()
	sink, _, err := otelsink.NewFromEnv(ctx)
	if err != nil || sink == nil {
		return fmt.Errorf("NewFromEnv: %v, %v", sink, err)
	}
	st, err := sqlitestore.Open(os.Getenv(killedStoreEnv), nil)
	if err != nil {
		return err
	}
	model, err := openaimodel.New(openaimodel.Options{APIKey: jaegerAPIKey, BaseURL: os.Getenv(killedModelEnv), Model: "gpt-test"})
	if err != nil {
		return err
	}
	r := &polyloop.Runner{Model: model, Parser: toolcallparser.New(toolcallparser.Options{}), Executor: secretLookup{hang: os.Getenv(killedMarkerEnv)},
		Store: st, Sinks: []polyloop.EventSink{sink}}
	_, err = r.Run(ctx, id, jaegerAgent, polyloop.Task{Input: "look up " + jaegerTaskSecret})
	return err
}
