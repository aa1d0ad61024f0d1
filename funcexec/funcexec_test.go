package funcexec_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/funcexec"
)

type addArgs struct {
	A     int        `json:"a" jsonschema:"first addend"`
	B     int        `json:"b" jsonschema:"second addend"`
	Label string     `json:"label,omitempty"`
	Small int8       `json:"small,omitempty"`
	When  *time.Time `json:"when,omitempty"`
}

// newAdder returns an executor with an "add" tool and a counter of its calls.
func newAdder(t *testing.T) (*funcexec.Executor, *atomic.Int32) {
	t.Helper()
	e := funcexec.New()
	var calls atomic.Int32
	err := funcexec.Register(e, "add", "Adds two integers.", polyloop.ReplaySafe,
		func(_ context.Context, a addArgs) (string, error) {
			calls.Add(1)
			return fmt.Sprintf("%s%d", a.Label, a.A+a.B), nil
		})
	if err != nil {
		t.Fatal(err)
	}
	return e, &calls
}

func TestSchemaGeneratedFromArgs(t *testing.T) {
	t.Parallel()
	e, _ := newAdder(t)
	specs := e.ToolSpecs()
	if len(specs) != 1 {
		t.Fatalf("got %d specs, want 1", len(specs))
	}
	s := specs[0]
	if s.Name != "add" || s.Description != "Adds two integers." || s.Replay != polyloop.ReplaySafe {
		t.Errorf("spec = %+v", s)
	}
	var schema struct {
		Type       string `json:"type"`
		Properties map[string]struct {
			Type        any    `json:"type"`
			Description string `json:"description"`
		} `json:"properties"`
		Required             []string `json:"required"`
		AdditionalProperties any      `json:"additionalProperties"`
	}
	if err := json.Unmarshal(s.Parameters, &schema); err != nil {
		t.Fatalf("parameters are not JSON: %v", err)
	}
	if schema.Type != "object" {
		t.Errorf("type = %q, want object", schema.Type)
	}
	if p := schema.Properties["a"]; p.Type != "integer" || p.Description != "first addend" {
		t.Errorf("property a = %+v", p)
	}
	if p := schema.Properties["label"]; p.Type != "string" {
		t.Errorf("property label = %+v", p)
	}
	if strings.Join(schema.Required, ",") != "a,b" {
		t.Errorf("required = %v, want [a b]", schema.Required)
	}
	if schema.AdditionalProperties == nil {
		t.Error("additional properties are not refused")
	}
}

func TestExecuteCallsTheFunction(t *testing.T) {
	t.Parallel()
	e, calls := newAdder(t)
	out, err := e.Execute(context.Background(), polyloop.Action{Tool: "add", Args: json.RawMessage(`{"a":2,"b":40,"label":"="}`)})
	if err != nil {
		t.Fatal(err)
	}
	want := polyloop.ActionOutcome{Status: polyloop.Executed, Observation: "=42"}
	if out != want {
		t.Errorf("outcome = %+v, want %+v", out, want)
	}
	if calls.Load() != 1 {
		t.Errorf("function called %d times, want 1", calls.Load())
	}
}

func TestRefusedActionsAreNotExecuted(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		action polyloop.Action
		reason string // a fragment of the audit observation
	}{
		{"unknown tool", polyloop.Action{Tool: "sub", Args: json.RawMessage(`{"a":1,"b":2}`)}, `unknown tool "sub"`},
		{"code action", polyloop.Action{Code: "echo hi", Lang: "bash"}, "code action"},
		{"missing required", polyloop.Action{Tool: "add", Args: json.RawMessage(`{"a":1}`)}, "schema"},
		{"no arguments", polyloop.Action{Tool: "add"}, "schema"},
		{"wrong type", polyloop.Action{Tool: "add", Args: json.RawMessage(`{"a":"1","b":2}`)}, "schema"},
		{"not an integer", polyloop.Action{Tool: "add", Args: json.RawMessage(`{"a":1.5,"b":2}`)}, "schema"},
		{"unknown property", polyloop.Action{Tool: "add", Args: json.RawMessage(`{"a":1,"b":2,"c":3}`)}, "schema"},
		{"null", polyloop.Action{Tool: "add", Args: json.RawMessage(`null`)}, "schema"},
		{"array", polyloop.Action{Tool: "add", Args: json.RawMessage(`[1,2]`)}, "schema"},
		{"malformed JSON", polyloop.Action{Tool: "add", Args: json.RawMessage(`{"a":1,`)}, "not valid JSON"},
		{"out of range", polyloop.Action{Tool: "add", Args: json.RawMessage(`{"a":1,"b":2,"small":300}`)}, "schema"},
		{"does not decode", polyloop.Action{Tool: "add", Args: json.RawMessage(`{"a":1,"b":2,"when":"yesterday"}`)}, "do not decode"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e, calls := newAdder(t)
			out, err := e.Execute(context.Background(), tc.action)
			if err != nil {
				t.Fatal(err)
			}
			if out.Status != polyloop.NotExecuted {
				t.Errorf("status = %q, want not_executed (observation %q)", out.Status, out.Observation)
			}
			if !strings.Contains(out.Observation, tc.reason) {
				t.Errorf("observation %q does not say %q", out.Observation, tc.reason)
			}
			if calls.Load() != 0 {
				t.Errorf("function was called %d times", calls.Load())
			}
		})
	}
}

type queryArgs struct {
	SQL string `json:"sql"`
}

var errDBGone = errors.New("database connection refused")

func newQuery(t *testing.T, fnErr error) *funcexec.Executor {
	t.Helper()
	e := funcexec.New()
	funcexec.MustRegister(e, "query", "Runs SQL.", polyloop.NeverReplay,
		func(_ context.Context, _ queryArgs) (string, error) { return "partial output", fnErr })
	return e
}

func TestFunctionErrorIsExecuted(t *testing.T) {
	t.Parallel()
	e := newQuery(t, errors.New(`syntax error at or near "SELEC"`))
	out, err := e.Execute(context.Background(), polyloop.Action{Tool: "query", Args: json.RawMessage(`{"sql":"SELEC 1"}`)})
	if err != nil {
		t.Fatal(err)
	}
	want := polyloop.ActionOutcome{Status: polyloop.Executed, Observation: `syntax error at or near "SELEC"`}
	if out != want {
		t.Errorf("outcome = %+v, want %+v", out, want)
	}
}

func TestEnvErrorIsEnvError(t *testing.T) {
	t.Parallel()
	for name, fnErr := range map[string]error{
		"direct":  funcexec.EnvError(errDBGone),
		"wrapped": fmt.Errorf("query: %w", funcexec.EnvError(errDBGone)),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newQuery(t, fnErr)
			out, err := e.Execute(context.Background(), polyloop.Action{Tool: "query", Args: json.RawMessage(`{"sql":"SELECT 1"}`)})
			if err != nil {
				t.Fatal(err)
			}
			if out.Status != polyloop.EnvError || !strings.Contains(out.Observation, errDBGone.Error()) {
				t.Errorf("outcome = %+v, want env_error mentioning %q", out, errDBGone)
			}
		})
	}
}

func TestEnvErrorWrapper(t *testing.T) {
	t.Parallel()
	if funcexec.EnvError(nil) != nil {
		t.Error("EnvError(nil) is not nil")
	}
	err := funcexec.EnvError(errDBGone)
	var env *funcexec.EnvironmentError
	if !errors.As(err, &env) || !errors.Is(err, errDBGone) {
		t.Errorf("EnvError(%v) is not detectable or loses its cause", errDBGone)
	}
}

func TestCancellationPropagates(t *testing.T) {
	t.Parallel()
	e := funcexec.New()
	started := make(chan struct{})
	funcexec.MustRegister(e, "wait", "Waits for cancellation.", polyloop.NeverReplay,
		func(ctx context.Context, _ struct{}) (string, error) {
			close(started)
			<-ctx.Done()
			return "", ctx.Err()
		})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel() }()
	_, err := e.Execute(ctx, polyloop.Action{Tool: "wait", Args: json.RawMessage(`{}`)})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}

	// A context already done: nothing runs.
	_, err = e.Execute(ctx, polyloop.Action{Tool: "wait"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("done context: err = %v, want context.Canceled", err)
	}
}

func TestPanicIsNotRecovered(t *testing.T) {
	t.Parallel()
	e := funcexec.New()
	funcexec.MustRegister(e, "boom", "Panics.", polyloop.NeverReplay,
		func(context.Context, struct{}) (string, error) { panic("tool bug") })
	defer func() {
		if r := recover(); r != "tool bug" {
			t.Errorf("recovered %v, want the tool's panic", r)
		}
	}()
	_, _ = e.Execute(context.Background(), polyloop.Action{Tool: "boom"})
	t.Error("Execute returned instead of panicking")
}

func TestRegisterRefusesBadTools(t *testing.T) {
	t.Parallel()
	e, _ := newAdder(t)
	ok := func(context.Context, struct{}) (string, error) { return "", nil }
	if err := funcexec.Register(e, "add", "again", polyloop.ReplaySafe, ok); err == nil {
		t.Error("duplicate name accepted")
	}
	if err := funcexec.Register(e, "", "no name", polyloop.ReplaySafe, ok); err == nil {
		t.Error("empty name accepted")
	}
	if err := funcexec.Register(e, "x", "bad policy", polyloop.ReplayPolicy("sometimes"), ok); err == nil {
		t.Error("unknown replay policy accepted")
	}
	if err := funcexec.Register(e, "s", "string args", polyloop.ReplaySafe,
		func(context.Context, string) (string, error) { return "", nil }); err == nil {
		t.Error("non-object arguments accepted")
	}
	if err := funcexec.Register(e, "c", "channel args", polyloop.ReplaySafe,
		func(context.Context, struct{ C chan int }) (string, error) { return "", nil }); err == nil {
		t.Error("arguments without a schema accepted")
	}
	if got := len(e.ToolSpecs()); got != 1 {
		t.Errorf("%d tools registered after refusals, want 1", got)
	}
}

func TestToolSpecsAndDescribe(t *testing.T) {
	t.Parallel()
	e, _ := newAdder(t)
	funcexec.MustRegister(e, "echo", "", "", func(_ context.Context, a queryArgs) (string, error) { return a.SQL, nil })
	specs := e.ToolSpecs()
	if specs[0].Name != "add" || specs[1].Name != "echo" {
		t.Fatalf("specs not in registration order: %v, %v", specs[0].Name, specs[1].Name)
	}
	if specs[1].Replay != polyloop.NeverReplay {
		t.Errorf("empty replay policy became %q, want never_replay", specs[1].Replay)
	}
	specs[0].Parameters[0] = 'X' // the copy is the caller's
	if e.ToolSpecs()[0].Parameters[0] != '{' {
		t.Error("ToolSpecs shares memory with the executor")
	}
	d := e.Describe()
	if d.Name != "funcexec" || string(d.Config) != `{"tools":["add","echo"]}` {
		t.Errorf("Describe = %s %s", d.Name, d.Config)
	}
}

// A mechanism failure reaching a tool function — a persistence failure, or
// an error of a child run from polyloop.InvokeChild — is returned as an
// error, never made an observation, even when it also wraps EnvError.
func TestMechanismErrorsPropagate(t *testing.T) {
	t.Parallel()
	cause := errors.New("disk full")
	for name, fnErr := range map[string]error{
		"persistence":    &polyloop.PersistenceError{Op: "append", RunID: "p", Err: cause},
		"child":          fmt.Errorf("delegate: %w", &polyloop.ChildError{ChildRunID: "p/1.1", Err: cause}),
		"child envError": funcexec.EnvError(&polyloop.ChildError{ChildRunID: "p/1.1", Err: cause}),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newQuery(t, fnErr)
			out, err := e.Execute(context.Background(), polyloop.Action{Tool: "query", Args: json.RawMessage(`{"sql":"SELECT 1"}`)})
			if !errors.Is(err, cause) || out.Status != "" {
				t.Fatalf("Execute = %+v, %v; want the error propagated", out, err)
			}
		})
	}
}
