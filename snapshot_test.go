package polyloop_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/scriptmodel"
)

// SPEC §6: Resume refuses a changed configuration naming the differing
// fields, unless overridden; the override is recorded in the log.
func TestSnapshotMismatch(t *testing.T) {
	ctx := context.Background()
	store := memstore.New()
	model := scriptmodel.New(call(1, "echo", map[string]string{"text": "a"}), scriptmodel.Reply("end"))
	agent := testAgent()
	store.SetFaults(memstore.Options{CrashAfter: 4})
	if _, err := newRunner(model, store, newTestExec()).Run(ctx, "r1", agent, polyloop.Task{Input: "go"}); !errors.Is(err, memstore.ErrCrashed) {
		t.Fatal(err)
	}
	store.SetFaults(memstore.Options{})
	changed := testAgent()
	temp := 0.7
	changed.Model.Temperature = &temp
	changed.Tools[0].Replay = polyloop.NeverReplay
	before := store.Len()
	_, err := newRunner(model, store, newTestExec()).Resume(ctx, "r1", changed)
	var mm *polyloop.SnapshotMismatchError
	if !errors.As(err, &mm) || !errors.Is(err, polyloop.ErrSnapshotMismatch) {
		t.Fatalf("err = %v, want *SnapshotMismatchError", err)
	}
	if !slices.Equal(mm.Fields, []string{"model.temperature", "tools[0].replay"}) {
		t.Fatalf("fields %v", mm.Fields)
	}
	if !strings.Contains(err.Error(), "model.temperature") {
		t.Fatalf("message does not name the field: %v", err)
	}
	if store.Len() != before {
		t.Fatal("a refused resume wrote records")
	}
	res, err := newRunner(model, store, newTestExec()).ResumeWith(ctx, "r1", changed, polyloop.ResumeOptions{AllowConfigChange: true})
	if err != nil || res.StopReason != polyloop.StopCompleted {
		t.Fatalf("override resume: %+v %v", res, err)
	}
	log, _ := polyloop.ReadLog(ctx, store, "r1")
	var ov *polyloop.ConfigOverride
	for _, r := range log.Records {
		if b, ok := r.Body.(*polyloop.ConfigOverride); ok {
			ov = b
		}
	}
	if ov == nil || !slices.Equal(ov.Fields, mm.Fields) || ov.SnapshotHash != mm.CurrentHash {
		t.Fatalf("override record %+v", ov)
	}
	if _, h := log.Snapshot(); h != mm.CurrentHash {
		t.Fatal("the override's snapshot is not in force")
	}
	// The log, override included, is valid.
	if _, err := polyloop.PlanResume(log); err != nil {
		t.Fatal(err)
	}
}

// SPEC §12: adding an optional field with its zero value must not change
// the hash; the hash is stable across processes for the same configuration.
func TestSnapshotHashStable(t *testing.T) {
	s := polyloop.Snapshot{Agent: "a", Task: polyloop.Task{Input: "t"}, Model: polyloop.ModelParams{Model: "m"}}
	h1, err := s.Hash()
	if err != nil {
		t.Fatal(err)
	}
	// Zero-valued optional fields are omitted from the canonical form.
	s.Model.Extra = map[string]any{}
	s.Tools = []polyloop.ToolSpec{}
	h2, _ := s.Hash()
	if h1 != h2 {
		t.Fatal("empty optional fields changed the hash")
	}
	c, _ := s.Canonical()
	const want = `{"agent":"a","executor":{"name":""},"limits":{},"model":{"model":"m"},"model_client":{"name":""},"parser":{"name":""},"synthetic":{},"task":{"input":"t"}}`
	if string(c) != want {
		t.Fatalf("canonical form\n%s\nwant\n%s", c, want)
	}
	if !strings.HasPrefix(h1, "sha256:") || len(h1) != 71 {
		t.Fatalf("hash %q", h1)
	}
	// Key order of tool parameters does not matter.
	a := polyloop.Snapshot{Tools: []polyloop.ToolSpec{{Name: "x", Parameters: json.RawMessage(`{"b":1,"a":2}`)}}}
	b := polyloop.Snapshot{Tools: []polyloop.ToolSpec{{Name: "x", Parameters: json.RawMessage(`{ "a":2, "b":1 }`)}}}
	ha, _ := a.Hash()
	hb, _ := b.Hash()
	if ha != hb {
		t.Fatal("parameter key order changed the hash")
	}
}

// keyedClient holds an API key, as a real provider client does, and
// describes itself without it.
type keyedClient struct {
	inner  polyloop.ModelClient
	apiKey string
}

func (k *keyedClient) Complete(ctx context.Context, req polyloop.ModelRequest) (polyloop.ModelReply, error) {
	return k.inner.Complete(ctx, req)
}

func (k *keyedClient) Describe() polyloop.Component {
	return polyloop.Component{Name: "keyed", Config: json.RawMessage(`{"base_url":"http://127.0.0.1:1"}`)}
}

// SPEC §6: a planted API key never appears in any record, even when the
// model fails.
func TestSecretNeverStored(t *testing.T) {
	const key = "sk-planted-0123456789abcdefSECRET"
	t.Setenv("POLYLOOP_TEST_API_KEY", key)
	store := memstore.New()
	client := &keyedClient{inner: scriptmodel.New(call(1, "echo", map[string]string{"text": "a"}), scriptmodel.Fail(errors.New("upstream 500"))), apiKey: os.Getenv("POLYLOOP_TEST_API_KEY")}
	sink := &collectSink{}
	r := &polyloop.Runner{Model: client, Parser: testParser{}, Executor: newTestExec(), Store: store, Sinks: []polyloop.EventSink{sink}}
	if _, err := r.Run(context.Background(), "r1", testAgent(), polyloop.Task{Input: "go"}); err != nil {
		t.Fatal(err)
	}
	log, _ := polyloop.ReadLog(context.Background(), store, "r1")
	data, _ := polyloop.EncodeRecords(log.Records)
	if len(log.Records) < 5 || strings.Contains(string(data), key) {
		t.Fatalf("key found in the log (or log too short to tell): %d records", len(log.Records))
	}
	evs, _ := json.Marshal(sink.events)
	if strings.Contains(string(evs), key) {
		t.Fatal("key found in events")
	}
}
