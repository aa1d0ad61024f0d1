package sweep

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
)

// FuzzJSONLTask: any line is a task or a problem at a position within it,
// never a panic; a task read has an id and an input, and encodes.
func FuzzJSONLTask(f *testing.F) {
	for _, s := range []string{`{"id": "t1", "input": "x", "target": ["4", 4], "metadata": {"a": {"b": 1}}}`, `{"id": 1.5}`,
		`{"id": "a" "input": "x"}`, `[`, `{"input": "\u0000"}`, `{"id": "a", "input": "x"} x`, "{\"id\":\"\xff\"}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		task, prob := jsonTask("f.jsonl", 1, line)
		if prob != nil {
			if prob.Line != 1 || prob.Column < 0 || prob.Column > len([]rune(string(line)))+1 {
				t.Fatalf("problem %+v of a %d-byte line", prob, len(line))
			}
			return
		}
		if _, err := json.Marshal(task); err != nil {
			t.Fatalf("task %+v does not encode: %v", task, err)
		}
	})
}

// FuzzCSVTasks: any CSV file is tasks or problems, never a panic.
func FuzzCSVTasks(f *testing.F) {
	for _, s := range []string{"id,input,target\nt1,x,4\n", "id,input\n\"a\nb\",c\n", "id\n", "id,input,id\n", "id,input\nq,\"x\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		err := readCSV(context.Background(), "f.csv", bytes.NewReader(data), func(line int, task Task, prob *TaskError) error {
			if prob == nil && line < 1 {
				t.Fatalf("a task at line %d", line)
			}
			return nil
		})
		_ = err
	})
}
