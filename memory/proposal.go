package memory

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/polyloop/polyloop"
)

// Proposal is what the proposer child proposed, as the maintenance received
// it (the reception's recorded value): operations on the memory and a view
// change — or a proposal skipped, which is not an empty proposal: an empty
// one still runs the basis checks.
type Proposal struct {
	// Skipped: the proposal failed (the child did not complete, or its
	// answer was not a proposal) and the policy skipped it; Reason says
	// why. Nothing of the step's maintenance follows.
	Skipped bool   `json:"skipped,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Ops     []Op   `json:"ops,omitempty"`
	// View is the change of the view; nil: the view follows the writes
	// (written entries are shown, deleted members dropped).
	View *ViewChange `json:"view,omitempty"`
}

// ViewChange names the entries to show and the members to drop.
type ViewChange struct {
	Include []EntryID `json:"include,omitempty"`
	Exclude []EntryID `json:"exclude,omitempty"`
}

// proposalInput is what the proposer is shown, recorded before it runs so
// that the basis is fixed: the live entries (at most MaxEntries), their
// versions, and the view version with its members.
type proposalInput struct {
	Entries []Entry   `json:"entries,omitempty"`
	View    int64     `json:"view"`
	Members []EntryID `json:"members,omitempty"`
}

// basis is the versions of the entries shown.
func (in proposalInput) basis() Basis {
	b := make(Basis, len(in.Entries))
	for i, e := range in.Entries {
		b[i] = Expect{Namespace: e.Namespace, Key: e.Key, Version: e.Version}
	}
	return b
}

// DefaultProposerSystem is the system prompt of a proposer agent.
const DefaultProposerSystem = `You maintain an agent's long-term memory. You are shown one step of the agent's work, what it remembers (namespace/key @version: value) and what its view shows. Decide what to remember, change or forget, and which entries the agent should be shown.
Answer with exactly one JSON object and nothing else:
{"memory": [{"op": "put", "namespace": "...", "key": "...", "value": <any JSON>}, {"op": "delete", "namespace": "...", "key": "..."}],
 "view": {"include": [{"namespace": "...", "key": "..."}], "exclude": [{"namespace": "...", "key": "..."}]}}
"memory" may be empty; omit "view" to show what you write. Only delete entries you were shown.`

// proposalTask is the proposer child's task: the step and the memory, in a
// fixed form.
func proposalTask(step polyloop.MaintainedStep, in proposalInput) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Run %s, step %d (%s).\n\nThe step:\n", step.RunID, step.Step, step.Decision)
	for _, m := range step.Messages {
		fmt.Fprintf(&b, "[%s] %s\n", m.Role, m.Content)
		for _, tc := range m.ToolCalls {
			fmt.Fprintf(&b, "[tool call] %s %s\n", tc.Name, tc.Args)
		}
	}
	b.WriteString("\nWhat the agent remembers:\n")
	if len(in.Entries) == 0 {
		b.WriteString("(nothing)\n")
	}
	for _, e := range in.Entries {
		fmt.Fprintf(&b, "- %s @%d: %s\n", e.ID(), e.Version, e.Value)
	}
	fmt.Fprintf(&b, "\nThe view (version %d) shows:", in.View)
	if len(in.Members) == 0 {
		b.WriteString(" nothing")
	}
	for _, id := range in.Members {
		fmt.Fprintf(&b, " %s", id)
	}
	b.WriteString("\n")
	return b.String()
}

// proposalJSON is the proposer's answer as written (docs/agent-file.md,
// "The proposer's answer").
type proposalJSON struct {
	Memory []opJSON    `json:"memory"`
	View   *ViewChange `json:"view"`
}

// opJSON is one element of a proposal's "memory".
type opJSON struct {
	Op        string          `json:"op"`
	Namespace string          `json:"namespace"`
	Key       string          `json:"key"`
	Value     json.RawMessage `json:"value"`
}

// checkShape checks a decoded proposal against its documented shape and
// names the first field that breaks it: memory[i].op is "put" or "delete";
// memory[i].key is given; memory[i].namespace, when given, is one served;
// a put has a value and a delete none; view.include[i] and
// view.exclude[i] name a key, and a namespace served when they name one.
func checkShape(pj proposalJSON, namespaces []string) error {
	ns := func(field, n string) error {
		if n != "" && !slices.Contains(namespaces, n) {
			return fmt.Errorf("%s: %q is not a namespace of this memory (%s)", field, n, strings.Join(namespaces, ", "))
		}
		return nil
	}
	for i, o := range pj.Memory {
		at := fmt.Sprintf("memory[%d]", i)
		switch OpKind(o.Op) {
		case OpPut:
			if len(o.Value) == 0 {
				return fmt.Errorf("%s.value: a put needs a value (any JSON)", at)
			}
		case OpDelete:
			if len(o.Value) > 0 {
				return fmt.Errorf("%s.value: a delete has no value", at)
			}
		case "":
			return fmt.Errorf(`%s.op: missing ("put" or "delete")`, at)
		default:
			return fmt.Errorf(`%s.op: %q is neither "put" nor "delete"`, at, o.Op)
		}
		if o.Key == "" {
			return fmt.Errorf("%s.key: missing", at)
		}
		if err := ns(at+".namespace", o.Namespace); err != nil {
			return err
		}
	}
	if pj.View == nil {
		return nil
	}
	for _, part := range []struct {
		name string
		ids  []EntryID
	}{{"include", pj.View.Include}, {"exclude", pj.View.Exclude}} {
		for i, id := range part.ids {
			at := fmt.Sprintf("view.%s[%d]", part.name, i)
			if id.Key == "" {
				return fmt.Errorf("%s.key: missing", at)
			}
			if err := ns(at+".namespace", id.Namespace); err != nil {
				return err
			}
		}
	}
	return nil
}

// decodeError names the field a JSON decoding error is about.
func decodeError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return fmt.Errorf("%s: a %s, not a JSON %s", te.Field, jsonKind(te.Type.Kind().String()), te.Value)
	}
	return err
}

// jsonKind says a Go kind as the JSON it decodes.
func jsonKind(k string) string {
	switch k {
	case "string":
		return "string"
	case "slice":
		return "list"
	case "struct", "ptr", "map":
		return "object"
	}
	return k
}

// errNotAProposal marks an answer that is not a proposal: the proposal's
// content failure.
var errNotAProposal = errors.New("memory: the proposer's answer is not a proposal")

// parseProposal reads the proposer's final answer: one JSON object (a code
// fence around it is allowed), with known fields only; a namespace left
// out is the first one served. Deletes must name entries the proposer was
// shown.
func parseProposal(answer string, namespaces []string, in proposalInput) (Proposal, error) {
	text := strings.TrimSpace(answer)
	if i, j := strings.Index(text, "{"), strings.LastIndex(text, "}"); i >= 0 && j > i {
		text = text[i : j+1]
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(text)))
	dec.DisallowUnknownFields()
	var pj proposalJSON
	if err := dec.Decode(&pj); err != nil {
		return Proposal{}, fmt.Errorf("%w: %v", errNotAProposal, decodeError(err))
	}
	if err := checkShape(pj, namespaces); err != nil {
		return Proposal{}, fmt.Errorf("%w: %v", errNotAProposal, err)
	}
	var p Proposal
	for _, o := range pj.Memory {
		op := Op{Kind: OpKind(o.Op), Namespace: o.Namespace, Key: o.Key, Value: o.Value}
		if op.Namespace == "" {
			op.Namespace = namespaces[0]
		}
		p.Ops = append(p.Ops, op)
	}
	w := Write{ID: "proposal", Basis: in.basis(), Ops: p.Ops}
	if _, err := normalize(w, namespaces, true); err != nil {
		return Proposal{}, fmt.Errorf("%w: %v", errNotAProposal, err)
	}
	if pj.View != nil {
		p.View = pj.View
		for _, ids := range [][]EntryID{p.View.Include, p.View.Exclude} {
			for i := range ids {
				if ids[i].Namespace == "" {
					ids[i].Namespace = namespaces[0]
				}
			}
		}
	}
	return p, nil
}
