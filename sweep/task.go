package sweep

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/polyloop/polyloop"
)

// Task is one task of a sweep: what the agent is given (Input, Metadata)
// and what its answer is scored against (Target). Its JSON form is the
// task files' (see TaskFile) and the ledger entries'.
type Task struct {
	// ID names the task in the sweep's task file: unique there.
	ID    string `json:"id"`
	Input string `json:"input"`
	// Target lists the acceptable answers (a scorer's reference); empty
	// when the task has none.
	Target []string `json:"target,omitempty"`
	// Metadata is the task's metadata; it enters the run's snapshot as the
	// task's Meta.
	Metadata map[string]string `json:"metadata,omitempty"`
}

// MaxTaskBytes bounds a task as its file holds it (a line of a JSONL file,
// a record of a CSV file): 8 MiB.
const MaxTaskBytes = 8 << 20

// RunTask is the task as a run is given it.
func (t Task) RunTask() polyloop.Task {
	return polyloop.Task{Input: t.Input, Meta: t.Metadata}
}

// Digest identifies what a run is shown of the task (its input and
// metadata): "sha256:" and the hex SHA-256 of their JSON.
func (t Task) Digest() string { return digestJSON(t.RunTask()) }

// TargetDigest identifies the task's target; "" when it has none.
func (t Task) TargetDigest() string {
	if len(t.Target) == 0 {
		return ""
	}
	return digestJSON(t.Target)
}

func digestJSON(v any) string {
	b, err := json.Marshal(v) // maps encode with sorted keys
	if err != nil {
		panic(fmt.Sprintf("sweep: digest of %T: %v", v, err)) // strings and maps of strings always encode
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// TaskSource is where a sweep's tasks come from. A sweep calls Check once
// before it runs anything, then Tasks as often as it needs: each call reads
// the tasks again, in the same order.
type TaskSource interface {
	// Check reads every task and reports every problem with the data (a
	// malformed line, a missing or duplicate id, an empty input) as a
	// TaskErrors list, or the error that stopped the reading; n counts the
	// tasks.
	Check(ctx context.Context) (n int, err error)
	// Tasks calls yield for each task, stopping at the first error yield
	// returns. A source that Check found no problem in yields every task.
	Tasks(ctx context.Context, yield func(Task) error) error
	// Describe names the source for the manifest and for messages (a file
	// path).
	Describe() string
}

// TaskError is a problem in a task file, at a position.
type TaskError struct {
	File string
	// Line and Column are 1-based; Column 0 when the problem is the whole
	// line or record.
	Line, Column int
	Msg          string
}

func (e *TaskError) Error() string {
	if e.Column > 0 {
		return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Column, e.Msg)
	}
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
}

// TaskErrors are the problems of a task source, in order; at most
// MaxTaskErrors of them are listed, then More counts the rest.
type TaskErrors struct {
	List []*TaskError
	More int
}

// MaxTaskErrors bounds the problems Check lists.
const MaxTaskErrors = 50

func (e *TaskErrors) Error() string {
	lines := make([]string, len(e.List))
	for i, t := range e.List {
		lines[i] = t.Error()
	}
	if e.More > 0 {
		lines = append(lines, fmt.Sprintf("... and %d more problems", e.More))
	}
	return strings.Join(lines, "\n")
}

// Unwrap gives errors.As each problem.
func (e *TaskErrors) Unwrap() []error {
	out := make([]error, len(e.List))
	for i, t := range e.List {
		out[i] = t
	}
	return out
}

// problems gathers a source's problems for Check.
type problems struct {
	TaskErrors
	ids map[string]int // id → line of its first task
}

func (p *problems) add(e *TaskError) {
	if len(p.List) < MaxTaskErrors {
		p.List = append(p.List, e)
	} else {
		p.More++
	}
}

// task checks one task read at line of file.
func (p *problems) task(file string, line int, t Task) {
	if msg := t.problem(); msg != "" {
		p.add(&TaskError{File: file, Line: line, Msg: msg})
		return
	}
	if p.ids == nil {
		p.ids = map[string]int{}
	}
	if first, dup := p.ids[t.ID]; dup {
		p.add(&TaskError{File: file, Line: line, Msg: fmt.Sprintf("duplicate task id %q (first at line %d)", t.ID, first)})
		return
	}
	p.ids[t.ID] = line
}

func (p *problems) err() error {
	if len(p.List) == 0 {
		return nil
	}
	return &p.TaskErrors
}

// TaskList is a TaskSource of tasks held in memory, for callers that build
// their tasks in Go. A problem's "line" is the task's index, from 1.
type TaskList []Task

// Check implements TaskSource.
func (l TaskList) Check(ctx context.Context) (int, error) {
	var p problems
	for i, t := range l {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		p.task(l.Describe(), i+1, t)
	}
	return len(l), p.err()
}

// Tasks implements TaskSource.
func (l TaskList) Tasks(ctx context.Context, yield func(Task) error) error {
	for _, t := range l {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := yield(t); err != nil {
			return err
		}
	}
	return nil
}

// Describe implements TaskSource.
func (l TaskList) Describe() string { return "tasks (" + strconv.Itoa(len(l)) + " in memory)" }

// problem says what is wrong with a task whatever its source, or "".
func (t Task) problem() string {
	switch {
	case t.ID == "":
		return "the task has no id"
	case !utf8.ValidString(t.ID):
		return "the task's id is not valid UTF-8"
	case t.Input == "":
		return fmt.Sprintf("task %q has an empty input", t.ID)
	case !utf8.ValidString(t.Input):
		return fmt.Sprintf("task %q: its input is not valid UTF-8", t.ID)
	}
	return ""
}
