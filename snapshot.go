package polyloop

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
)

// SnapshotVersion is the version of the snapshot's schema; it prefixes the
// hashed bytes.
const SnapshotVersion = 1

// Snapshot is everything the model can see and everything that changes the
// loop's behaviour, frozen into a run's RunStarted record. Two runs with the
// same snapshot hash showed the model the same things. Secrets never enter it.
type Snapshot struct {
	Agent     string                `json:"agent"`
	System    string                `json:"system,omitempty"`
	Task      Task                  `json:"task"`
	Tools     []ToolSpec            `json:"tools,omitempty"`
	Synthetic SyntheticObservations `json:"synthetic"`
	Limits    Limits                `json:"limits"`
	Model     ModelParams           `json:"model"`
	// ParallelActions: the actions of a step's batch run concurrently.
	ParallelActions bool `json:"parallel_actions,omitempty"`
	// ApprovalPolicy names the agent's approval policy.
	ApprovalPolicy string `json:"approval_policy,omitempty"`
	// ModelClient, Parser and Executor identify the seams (Describer, or the
	// Go type name).
	ModelClient Component `json:"model_client"`
	Parser      Component `json:"parser"`
	Executor    Component `json:"executor"`
	// Memory says how the agent remembers (Agent.Memory); nil: it does not.
	Memory *MemorySnapshot `json:"memory,omitempty"`
	// Environment is what the run's environment is (EnvDescription); nil:
	// the run has none.
	Environment *EnvDescription `json:"environment,omitempty"`
}

// snapshot builds the snapshot of an agent, a task and the runner's seams.
// Synthetic observations take their defaults and replay policies are
// normalized, so that equivalent configurations hash alike.
func (r *Runner) snapshot(agent Agent, task Task) Snapshot {
	tools := make([]ToolSpec, len(agent.Tools))
	gated := false
	for i, t := range agent.Tools {
		t.Replay = t.Replay.normalize()
		if len(t.Parameters) > 0 {
			t.Parameters = compactJSON(t.Parameters)
		}
		tools[i] = t
		gated = gated || t.Approval != "" || t.Deferred
	}
	synth := agent.Synthetic.withDefaults()
	if gated && synth.Denied == "" {
		synth.Denied = DefaultDenied
	}
	policy := ""
	if agent.ApprovalPolicy != nil {
		policy = agent.ApprovalPolicy.Name
	}
	return Snapshot{
		Agent:           agent.Name,
		System:          agent.System,
		Task:            task,
		Tools:           tools,
		Synthetic:       synth,
		ApprovalPolicy:  policy,
		Limits:          agent.Limits,
		Model:           agent.Model,
		ParallelActions: agent.ParallelActions,
		ModelClient:     Describe(r.Model),
		Parser:          Describe(r.Parser),
		Executor:        Describe(r.Executor),
		Memory:          agent.Memory.snapshot(),
		Environment:     agent.envDesc,
	}
}

func compactJSON(raw json.RawMessage) json.RawMessage {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return raw
	}
	return buf.Bytes()
}

// Describe is the identity of a seam in the snapshot: what its Describe
// method returns (Describer), or its Go type name. Everything that names a
// component in a snapshot — the runner, agent files, the kit, the benchmark
// — calls it, so that a snapshot computed anywhere hashes alike.
func Describe(v any) Component {
	if d, ok := v.(Describer); ok {
		return d.Describe()
	}
	return Component{Name: fmt.Sprintf("%T", v)}
}

// Canonical returns the canonical encoding of the snapshot: JSON with sorted
// keys, no insignificant whitespace, UTF-8, no HTML escaping. Zero-valued
// optional fields are omitted, so adding an optional field does not change
// the encoding of existing configurations.
func (s Snapshot) Canonical() ([]byte, error) {
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	return canonicalJSON(raw)
}

// Hash is "sha256:" and the hex SHA-256 of "polyloop-snapshot/v<N>\n"
// followed by the canonical encoding.
func (s Snapshot) Hash() (string, error) {
	c, err := s.Canonical()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "polyloop-snapshot/v%d\n", SnapshotVersion)
	h.Write(c)
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// AgentHash is the hash of the snapshot without its task (Hash with Task
// zero): the agent's configuration — everything the model sees and the
// loop does, but the task. Runs of one agent on different tasks share it
// where their Hash differs, so it is the key that groups runs by agent
// configuration; Hash stays the key of "the same inputs". It equals the
// hash of Runner.SnapshotOf(agent, Task{}).
func (s Snapshot) AgentHash() (string, error) {
	s.Task = Task{}
	return s.Hash()
}

func canonicalJSON(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil { // maps encode with sorted keys
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// DiffSnapshots names the fields in which two snapshots differ, as paths
// such as "model.temperature" or "tools[1].replay", sorted.
func DiffSnapshots(a, b Snapshot) []string {
	av, err1 := genericJSON(a)
	bv, err2 := genericJSON(b)
	if err1 != nil || err2 != nil {
		return []string{"<snapshot not encodable>"}
	}
	var out []string
	diffValue("", av, bv, &out)
	sort.Strings(out)
	return out
}

func genericJSON(s Snapshot) (any, error) {
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	err = dec.Decode(&v)
	return v, err
}

func diffValue(path string, a, b any, out *[]string) {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		for k := range keys {
			p := k
			if path != "" {
				p = path + "." + k
			}
			diffValue(p, am[k], bm[k], out)
		}
		return
	}
	as, aok := a.([]any)
	bs, bok := b.([]any)
	if aok && bok && len(as) == len(bs) {
		for i := range as {
			diffValue(path+"["+strconv.Itoa(i)+"]", as[i], bs[i], out)
		}
		return
	}
	if !reflect.DeepEqual(a, b) {
		if path == "" {
			path = "."
		}
		*out = append(*out, path)
	}
}
