package polyloop_test

import (
	"context"
	"encoding/json"
	"errors"
	"hash/crc32"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
)

// The log keeps an action intent whose action is a tool call as a
// reference to it; the reader (ReadLog), row by row, gives back the records
// the runner wrote, and the fold reads the log as written.
func TestToolCallReferenceResolves(t *testing.T) {
	written := referenceLog(t)
	file := rowsOfFile(t, "testdata/reference.jsonl")
	refs := 0
	for _, row := range file.rows {
		var r polyloop.Record
		if err := r.UnmarshalJSON(row.Data); err != nil {
			t.Fatal(err)
		}
		if in, ok := r.Body.(*polyloop.ActionIntent); ok && in.ToolCall > 0 {
			refs++
			if in.Action.Tool != "" || in.Action.Args != nil {
				t.Fatalf("intent %s keeps its action %+v beside tool call %d", in.ActionID, in.Action, in.ToolCall)
			}
		}
	}
	if refs == 0 {
		t.Fatal("the reference log has no intent referring to its tool call")
	}
	resolved, err := polyloop.ReadLog(context.Background(), file, "ref")
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range resolved.Records {
		if !reflect.DeepEqual(r.Body, written.Records[i].Body) {
			t.Fatalf("record %d resolves to %+v, the runner wrote %+v", i, r.Body, written.Records[i].Body)
		}
	}
	if !reflect.DeepEqual(polyloop.History(resolved), polyloop.History(written)) {
		t.Fatal("the history of the stored log differs from the written one's")
	}
}

// rowsOfFile is a store holding the lines of a JSON lines file as its rows,
// each with its checksum.
func rowsOfFile(t *testing.T, path string) *rowSink {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var s rowSink
	for i, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var env struct {
			Kind polyloop.RecordKind `json:"kind"`
		}
		if err := json.Unmarshal([]byte(line), &env); err != nil {
			t.Fatal(err)
		}
		s.rows = append(s.rows, polyloop.Row{Seq: int64(i), Kind: env.Kind, Data: []byte(line), Checksum: crc32.Checksum([]byte(line), crc32.MakeTable(crc32.Castagnoli))})
	}
	return &s
}

// A reference to a tool call the model result does not have, or beside an
// action that is not that call, is a corrupt log.
func TestToolCallReferenceCorrupt(t *testing.T) {
	for name, change := range map[string]func(in *polyloop.ActionIntent){
		"beyond the reply":   func(in *polyloop.ActionIntent) { in.ToolCall = 9 },
		"another action":     func(in *polyloop.ActionIntent) { in.Action = polyloop.Action{CallID: "x", Tool: "echo"} },
		"another model call": func(in *polyloop.ActionIntent) { in.ModelCallID = "m9.1" },
	} {
		log := readJSONL(t, "testdata/reference.jsonl")
		for i, r := range log.Records {
			if in, ok := r.Body.(*polyloop.ActionIntent); ok && in.ToolCall > 0 {
				c := *in
				change(&c)
				log.Records[i].Body = &c
				break
			}
		}
		if _, err := polyloop.PlanResume(log); !errors.Is(err, polyloop.ErrCorruptLog) {
			t.Errorf("%s: plan says %v, want a corrupt log", name, err)
		}
	}
}
