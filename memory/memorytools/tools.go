// Package memorytools gives an agent tools over its memory: remember,
// recall and forget, as Go functions of a funcexec executor. It is apart
// from package memory so that what imports memory — or its port,
// memoryport, as the stores do — does not link funcexec.
package memorytools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/funcexec"
	"github.com/polyloop/polyloop/memory"
)

// The tool names Register registers.
const (
	ToolRemember = "remember"
	ToolRecall   = "recall"
	ToolForget   = "forget"
)

type rememberArgs struct {
	Namespace string `json:"namespace,omitempty" jsonschema:"the namespace (default: the first one)"`
	Key       string `json:"key" jsonschema:"what to remember it under"`
	Value     any    `json:"value" jsonschema:"what to remember: any JSON value"`
	Version   *int64 `json:"version,omitempty" jsonschema:"the version you saw with recall (0: you expect none); omitted: whatever is there now"`
}

type recallArgs struct {
	Namespace string `json:"namespace,omitempty" jsonschema:"the namespace (default: the first one)"`
	Key       string `json:"key,omitempty" jsonschema:"the key; omitted: list the namespace"`
}

type forgetArgs struct {
	Namespace string `json:"namespace,omitempty" jsonschema:"the namespace (default: the first one)"`
	Key       string `json:"key" jsonschema:"the key to forget"`
	Version   *int64 `json:"version,omitempty" jsonschema:"the version you saw with recall; omitted: whatever is there now"`
}

// Register registers remember, recall and forget on exec, over m. All
// three are replay_safe: a write's id is "<run>/<action id>", from the run
// and the action that asked for it (polyloop.ActionFromContext), so a
// replayed action finds its own earlier commit instead of writing twice.
// A write made from a version that is no longer the live one is a conflict
// the model is told about (re-read and decide); a persistence or
// publication failure is returned as an error, which stops the run.
func Register(exec *funcexec.Executor, m *memory.Memory) error {
	t := &tools{m: m}
	return errors.Join(
		funcexec.Register(exec, ToolRemember, "Remember a value under a key, for this and later runs.", polyloop.ReplaySafe, t.remember),
		funcexec.Register(exec, ToolRecall, "Recall what is remembered under a key, or list a namespace, with versions.", polyloop.ReplaySafe, t.recall),
		funcexec.Register(exec, ToolForget, "Forget what is remembered under a key.", polyloop.ReplaySafe, t.forget),
	)
}

type tools struct{ m *memory.Memory }

func (t *tools) namespace(ns string) string {
	if ns == "" {
		return t.m.Namespaces()[0]
	}
	return ns
}

// write applies one operation from a version (nil: the live one), under
// the action's write id.
func (t *tools) write(ctx context.Context, op memory.Op, version *int64) (memory.Commit, error) {
	a, ok := polyloop.ActionFromContext(ctx)
	if !ok {
		return memory.Commit{}, errors.New("memory tools write only inside a run's action")
	}
	w := memory.Write{ID: a.RunID + "/" + a.ActionID, Ops: []memory.Op{op}, Provenance: memory.Provenance{RunID: a.RunID, Step: a.Step, CallID: a.ActionID}}
	if a.Attempt > 1 {
		// A replayed action: its first attempt may have committed, and
		// what it sees now may be its own effect.
		if c, ok, err := t.m.Committed(ctx, w); err != nil || ok {
			return c, err
		}
	}
	if version != nil {
		w.Basis = memory.Basis{{Namespace: op.Namespace, Key: op.Key, Version: *version}}
	} else {
		b, err := t.m.Basis(ctx, op.ID())
		if err != nil {
			return memory.Commit{}, err
		}
		if op.Kind == memory.OpDelete && b[0].Version == 0 {
			return memory.Commit{}, fmt.Errorf("nothing is remembered under %s", op.ID())
		}
		w.Basis = b
	}
	c, err := t.m.Apply(ctx, w)
	var ce *memory.ConflictError
	if errors.As(err, &ce) {
		return c, fmt.Errorf("not written: %v; recall it and decide", ce)
	}
	return c, err
}

func (t *tools) remember(ctx context.Context, a rememberArgs) (string, error) {
	raw, err := json.Marshal(a.Value)
	if err != nil {
		return "", err
	}
	op := memory.Op{Kind: memory.OpPut, Namespace: t.namespace(a.Namespace), Key: a.Key, Value: raw}
	c, err := t.write(ctx, op, a.Version)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("remembered %s (version %d)", op.ID(), c.Entries[0].Version), nil
}

func (t *tools) forget(ctx context.Context, a forgetArgs) (string, error) {
	op := memory.Op{Kind: memory.OpDelete, Namespace: t.namespace(a.Namespace), Key: a.Key}
	c, err := t.write(ctx, op, a.Version)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("forgot %s (version %d)", op.ID(), c.Entries[0].Version), nil
}

func (t *tools) recall(ctx context.Context, a recallArgs) (string, error) {
	ns := t.namespace(a.Namespace)
	if a.Key != "" {
		e, ok, err := t.m.Get(ctx, ns, a.Key)
		if err != nil || !ok {
			return fmt.Sprintf("%s/%s: nothing remembered (version 0)", ns, a.Key), err
		}
		return fmt.Sprintf("%s @%d: %s", e.ID(), e.Version, e.Value), nil
	}
	es, err := t.m.List(ctx, ns)
	if err != nil {
		return "", err
	}
	if len(es) == 0 {
		return ns + ": nothing remembered", nil
	}
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = fmt.Sprintf("%s @%d: %s", e.ID(), e.Version, e.Value)
	}
	return strings.Join(lines, "\n"), nil
}
