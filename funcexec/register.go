package funcexec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/polyloop/polyloop"
)

// tool is one registered function with its schema. It is immutable after
// registration.
type tool struct {
	spec     polyloop.ToolSpec
	resolved *jsonschema.Resolved
	// call decodes the validated arguments into the function's Args type and
	// calls it. A decode failure is reported as errBadArgs.
	call func(ctx context.Context, args json.RawMessage) (string, error)
	// reconcile, when set, answers for an action of unknown outcome
	// (SetReconciler).
	reconcile func(ctx context.Context, q polyloop.ReconcileQuery) (polyloop.Verdict, error)
}

// badArgsError is a failure to decode validated arguments into Args: the
// function was not called.
type badArgsError struct{ err error }

func (e *badArgsError) Error() string { return e.err.Error() }
func (e *badArgsError) Unwrap() error { return e.err }

// Register adds a tool named name that calls fn. The JSON Schema of its
// parameters is generated from Args, which must be a struct (or a map with
// string keys): tool parameters are a JSON object. Field descriptions come
// from `jsonschema:"..."` struct tags; fields without omitempty/omitzero are
// required, and unknown properties are refused.
//
// replay is the tool's polyloop.ReplayPolicy: ReplaySafe only if running fn
// again after a crash, with the same arguments, is harmless.
//
// Register fails if name is empty or already taken, if replay is not a known
// policy, or if no usable schema can be generated for Args. It is safe to call
// concurrently with Execute; a tool registered after a run started is not in
// that run's snapshot.
func Register[Args any](e *Executor, name, description string, replay polyloop.ReplayPolicy,
	fn func(ctx context.Context, args Args) (string, error)) error {
	if name == "" {
		return errors.New("funcexec: tool name is empty")
	}
	if fn == nil {
		return fmt.Errorf("funcexec: tool %q: function is nil", name)
	}
	if err := checkReplay(replay); err != nil {
		return fmt.Errorf("funcexec: tool %q: %w", name, err)
	}
	schema, err := jsonschema.For[Args](nil)
	if err != nil {
		return fmt.Errorf("funcexec: tool %q: generating the schema of its arguments: %w", name, err)
	}
	t, err := newTool(name, description, replay, schema)
	if err != nil {
		return err
	}
	t.call = func(ctx context.Context, raw json.RawMessage) (string, error) {
		var args Args
		if err := json.Unmarshal(raw, &args); err != nil {
			return "", &badArgsError{err: err}
		}
		return fn(ctx, args)
	}
	return e.add(t)
}

// MustRegister is like Register but panics on error. It is meant for
// package-level setup whose failure is a programming error.
func MustRegister[Args any](e *Executor, name, description string, replay polyloop.ReplayPolicy,
	fn func(ctx context.Context, args Args) (string, error)) {
	if err := Register(e, name, description, replay, fn); err != nil {
		panic(err)
	}
}

func checkReplay(p polyloop.ReplayPolicy) error {
	switch p {
	case "", polyloop.ReplaySafe, polyloop.NeverReplay, polyloop.ReplayIdempotent:
		return nil
	}
	return fmt.Errorf("unknown replay policy %q", string(p))
}

// newTool builds a tool from a generated schema: the schema must describe an
// object and must resolve, so that every call can be validated.
func newTool(name, description string, replay polyloop.ReplayPolicy, schema *jsonschema.Schema) (*tool, error) {
	if schema.Type != "object" {
		return nil, fmt.Errorf("funcexec: tool %q: arguments must be a JSON object (a struct or a map), got schema type %q",
			name, schema.Type)
	}
	resolved, err := schema.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("funcexec: tool %q: resolving the schema of its arguments: %w", name, err)
	}
	params, err := json.Marshal(schema)
	if err != nil {
		return nil, fmt.Errorf("funcexec: tool %q: encoding the schema of its arguments: %w", name, err)
	}
	if replay == "" {
		replay = polyloop.NeverReplay
	}
	return &tool{
		spec: polyloop.ToolSpec{
			Name:        name,
			Description: description,
			Parameters:  params,
			Replay:      replay,
		},
		resolved: resolved,
	}, nil
}
