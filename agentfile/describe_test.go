package agentfile

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/shellexec"
)

// TestRouterDescribesPartsAsTheSnapshotDoes: each routed executor is
// described by polyloop.Describe, the one rule the snapshot uses, so that a
// router's identity never drifts from its parts' (a drift would make every
// resume refuse the run with a snapshot mismatch).
func TestRouterDescribesPartsAsTheSnapshotDoes(t *testing.T) {
	t.Parallel()
	sh, err := shellexec.New(shellexec.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	plain := fakeExec{name: "x"} // no Describe: its Go type names it
	r := &router{parts: []routed{{"shell", sh}, {"mcp:x", plain}}}
	var cfg struct {
		Executors []struct {
			Name      string             `json:"name"`
			Component polyloop.Component `json:"component"`
		} `json:"executors"`
	}
	if err := json.Unmarshal(r.Describe().Config, &cfg); err != nil {
		t.Fatal(err)
	}
	want := []polyloop.Component{polyloop.Describe(sh), polyloop.Describe(plain)}
	if len(cfg.Executors) != 2 {
		t.Fatalf("router describes %d executors, want 2", len(cfg.Executors))
	}
	for i, e := range cfg.Executors {
		if e.Component.Name != want[i].Name || !reflect.DeepEqual(compact(t, e.Component.Config), compact(t, want[i].Config)) {
			t.Errorf("executor %d described as %+v, want polyloop.Describe's %+v", i, e.Component, want[i])
		}
	}
}

func compact(t *testing.T, raw json.RawMessage) any {
	t.Helper()
	if len(raw) == 0 {
		return nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	return v
}
