package sweep

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func writeTasks(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func allTasks(t *testing.T, src TaskSource) []Task {
	t.Helper()
	var out []Task
	if err := src.Tasks(context.Background(), func(task Task) error { out = append(out, task); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestTaskFileJSONL(t *testing.T) {
	t.Parallel()
	p := writeTasks(t, "t.jsonl", `{"id": "t1", "input": "2+2?", "target": "4"}

{"input": "name it", "id": 7, "target": ["a", 3.5], "metadata": {"level": "easy", "n": 2, "deep": {"x": [1, 2]}}}
`)
	n, err := TaskFile{Path: p}.Check(context.Background())
	if err != nil || n != 2 {
		t.Fatalf("Check = %d, %v", n, err)
	}
	got := allTasks(t, TaskFile{Path: p})
	want := []Task{
		{ID: "t1", Input: "2+2?", Target: []string{"4"}},
		{ID: "7", Input: "name it", Target: []string{"a", "3.5"}, Metadata: map[string]string{"level": "easy", "n": "2", "deep": `{"x":[1,2]}`}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("tasks %+v\nwant %+v", got, want)
	}
}

// Check reports every problem of a task file, each at its line and
// column.
func TestTaskFileProblems(t *testing.T) {
	t.Parallel()
	p := writeTasks(t, "t.jsonl", strings.Join([]string{
		`{"id": "a", "input": "x"}`,
		`{"id": "b", "input": "y", "targt": "z"}`,
		`{"id": "a", "input": "again"}`,
		`{"id": "c", "input": ""}`,
		`{"id": "d", "input": 3}`,
		`{"id": "e" "input": "x"}`,
		`[1, 2]`,
		`{"input": "no id"}`,
		`{"id": 1.5, "input": "x"}`,
		`{"id": "f", "input": "x", "id": "g"}`,
		`{"id": "h", "input": "x"} {"id": "i"}`,
	}, "\n"))
	_, err := TaskFile{Path: p}.Check(context.Background())
	var list *TaskErrors
	if !errors.As(err, &list) {
		t.Fatalf("Check: %v, want TaskErrors", err)
	}
	want := []string{
		p + `:2:27: unknown key "targt": the keys of a task are id, input, target, metadata`,
		p + `:3: duplicate task id "a" (first at line 1)`,
		p + `:4: task "c" has an empty input`,
		p + `:5:22: input: expected a string`,
		p + `:6:12: malformed JSON: invalid character '"' after object key:value pair`,
		p + `:7:1: expected a JSON object: a task with id, input and optionally target and metadata`,
		p + `:8:1: the task has no id`,
		p + `:9:8: id: expected a string or an integer`,
		p + `:10:27: the key "id" appears twice`,
		p + `:11:27: text after the task's object: one task per line`,
	}
	if got := strings.Split(err.Error(), "\n"); !reflect.DeepEqual(got, want) {
		t.Errorf("problems:\n%s\nwant:\n%s", err, strings.Join(want, "\n"))
	}
}

func TestTaskFileCSV(t *testing.T) {
	t.Parallel()
	p := writeTasks(t, "t.csv", "id,input,target,level\nt1,\"two, plus two\",4,easy\nt2,\"multi\nline\",,hard\n")
	n, err := TaskFile{Path: p}.Check(context.Background())
	if err != nil || n != 2 {
		t.Fatalf("Check = %d, %v", n, err)
	}
	want := []Task{
		{ID: "t1", Input: "two, plus two", Target: []string{"4"}, Metadata: map[string]string{"level": "easy"}},
		{ID: "t2", Input: "multi\nline", Metadata: map[string]string{"level": "hard"}},
	}
	if got := allTasks(t, TaskFile{Path: p}); !reflect.DeepEqual(got, want) {
		t.Errorf("tasks %+v\nwant %+v", got, want)
	}
	for _, tt := range []struct{ text, want string }{
		{"id,text\nt1,x\n", `:1: the header has no column "input"`},
		{"", `:1: the task file is empty`},
		{"id,input,id\n", `:1:3: column 3 of the header is empty or repeated ("id")`},
		{"id,input\nt1,x\nt2,\"open\n", `:3:10: extraneous or missing " in quoted-field`},
		{"id,input\nt1,x\nt1,y\nt2\n", ":3: duplicate task id \"t1\" (first at line 2)\n"},
	} {
		_, err := TaskFile{Path: writeTasks(t, "t.csv", tt.text)}.Check(context.Background())
		if err == nil || !strings.Contains(err.Error()+"\n", tt.want) {
			t.Errorf("%q: %v, want …%s", tt.text, err, tt.want)
		}
	}
	if _, err := (TaskFile{Path: writeTasks(t, "t.txt", "x")}).Check(context.Background()); err == nil || !strings.Contains(err.Error(), "expected a .jsonl") {
		t.Errorf("a .txt file: %v", err)
	}
}
