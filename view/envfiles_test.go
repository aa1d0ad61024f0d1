package view_test

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/envsnap"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/scriptmodel"
	"github.com/polyloop/polyloop/shellexec"
	"github.com/polyloop/polyloop/snapshotstore"
	"github.com/polyloop/polyloop/toolcallparser"
	"github.com/polyloop/polyloop/view"
)

// fileEnvs is an environment provider whose environments are a map of
// files, written by the commands "write PATH CONTENT" and "many N" (N
// files /work/many/I), and snapshotted as real manifests into a blob
// store.
type fileEnvs struct {
	store polyloop.BlobStore
	mu    sync.Mutex
	snaps map[polyloop.EnvSnapshot]map[string]string
}

var fileImage = polyloop.DigestOf([]byte("view test image"))

func (p *fileEnvs) Describe(context.Context, polyloop.EnvSpec) (polyloop.EnvDescription, error) {
	return polyloop.EnvDescription{Backend: "files", Image: fileImage, Network: polyloop.NetworkNone, WorkDir: "/work"}, nil
}

func (p *fileEnvs) Create(_ context.Context, spec polyloop.EnvSpec) (polyloop.Environment, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return &fileEnv{p: p, files: maps.Clone(p.snaps[spec.From])}, nil
}

type fileEnv struct {
	p     *fileEnvs
	files map[string]string
}

func (e *fileEnv) Description() polyloop.EnvDescription {
	d, _ := e.p.Describe(context.Background(), polyloop.EnvSpec{})
	return d
}

func (e *fileEnv) Exec(_ context.Context, req polyloop.ExecRequest) (polyloop.ExecResult, error) {
	f := strings.Fields(req.Argv[len(req.Argv)-1])
	if e.files == nil {
		e.files = map[string]string{}
	}
	switch {
	case len(f) == 3 && f[0] == "write":
		e.files[f[1]] = f[2]
	case len(f) == 2 && f[0] == "many":
		n, _ := strconv.Atoi(f[1])
		for i := range n {
			e.files[fmt.Sprintf("/work/many/%03d", i)] = "x"
		}
	default:
		return polyloop.ExecResult{ExitCode: 127}, nil
	}
	return polyloop.ExecResult{}, nil
}

func (e *fileEnv) CopyIn(context.Context, string, io.Reader) error  { return nil }
func (e *fileEnv) CopyOut(context.Context, string, io.Writer) error { return nil }

func (e *fileEnv) Snapshot(ctx context.Context) (polyloop.EnvSnapshot, error) {
	var entries []envsnap.Entry
	var blobs []polyloop.Blob
	for _, p := range slices.Sorted(maps.Keys(e.files)) {
		data := []byte(e.files[p])
		chunk := polyloop.Blob{Digest: polyloop.DigestOf(data), Data: data}
		blobs = append(blobs, chunk)
		entries = append(entries, envsnap.Entry{Path: p, Kind: envsnap.File, Mode: 0o644, Size: int64(len(data)), Chunks: []string{chunk.Digest}})
	}
	envsnap.Sort(entries)
	m, err := envsnap.Encode(envsnap.Manifest{Version: envsnap.Version, Image: fileImage, Entries: entries})
	if err != nil {
		return "", err
	}
	if err := e.p.store.Put(ctx, append(blobs, m)...); err != nil {
		return "", err
	}
	ref := polyloop.EnvSnapshot(m.Digest)
	e.p.mu.Lock()
	defer e.p.mu.Unlock()
	e.p.snaps[ref] = maps.Clone(e.files)
	return ref, nil
}

func (e *fileEnv) Restore(_ context.Context, ref polyloop.EnvSnapshot) error {
	e.p.mu.Lock()
	defer e.p.mu.Unlock()
	e.files = maps.Clone(e.p.snaps[ref])
	return nil
}

func (e *fileEnv) Destroy(context.Context) error { return nil }

// envRuns runs, in fileEnvs environments, one run per list of commands
// (one command a step, then an answer).
func envRuns(t *testing.T, runs map[string][]string) (*memstore.Store, *snapshotstore.Memory) {
	t.Helper()
	st, blobs := memstore.New(), snapshotstore.NewMemory()
	envs := &fileEnvs{store: blobs, snaps: map[polyloop.EnvSnapshot]map[string]string{}}
	ex, err := shellexec.New(shellexec.Options{InEnvironment: true})
	if err != nil {
		t.Fatal(err)
	}
	for id, cmds := range runs {
		var turns []scriptmodel.Turn
		for i, c := range cmds {
			turns = append(turns, scriptmodel.Call(fmt.Sprintf("c%d", i), shellexec.ToolName, map[string]string{"command": c}))
		}
		r := &polyloop.Runner{Model: scriptmodel.New(append(turns, scriptmodel.Reply("done"))...),
			Parser: toolcallparser.New(toolcallparser.Options{}), Executor: ex, Store: st, Environments: envs}
		agent := polyloop.Agent{Name: "files", Limits: polyloop.Limits{MaxSteps: 10}, Environment: &polyloop.EnvSpec{Image: "img", WorkDir: "/work"}}
		res, err := r.Run(context.Background(), id, agent, polyloop.Task{Input: "write"})
		if err != nil || res.StopReason != polyloop.StopCompleted {
			t.Fatalf("run %s: %+v, %v", id, res, err)
		}
	}
	return st, blobs
}

// TestCompareEnvironmentFiles: the comparison of two runs with
// environments lists the files that differ between them at the last step
// both have, or at ?step=N, by kind, escaped, at most 200 with a count of
// the rest; snapshots the store lacks are said so; without a snapshot
// store it shows no such section.
func TestCompareEnvironmentFiles(t *testing.T) {
	st, blobs := envRuns(t, map[string][]string{
		"ra": {"write /work/f1 one", "write /work/f2 two", "write /work/<b>&x two"},
		"rb": {"write /work/f1 one", "write /work/f3 three", "write /work/f1 uno"},
		"rc": {"write /work/f1 one", "many 250"},
	})
	s, _ := newServer(t, view.Options{Store: st, Snapshots: blobs})

	body := mustGet(t, s, "/compare?a=ra&b=rb")
	contains(t, "compare ra rb", body, `id="files"`, "Files at step 4", "4 paths differ",
		`<td class="fkind changed">changed</td><td><code>/work/f1</code>`,
		`<td class="fkind only_a">A only</td><td><code>/work/f2</code>`,
		`<td class="fkind only_b">B only</td><td><code>/work/f3</code>`,
		`<code>/work/&lt;b&gt;&amp;x</code>`)
	if strings.Contains(body, "<b>&x") {
		t.Errorf("compare ra rb: a path is not escaped")
	}

	body = mustGet(t, s, "/compare?a=ra&b=rb&step=1")
	contains(t, "compare ra rb step 1", body, "Files at step 1", "Same files: the environments agree at step 1")
	body = mustGet(t, s, "/compare?a=ra&b=rb&step=2")
	contains(t, "compare ra rb step 2", body, "Files at step 2", "2 paths differ", "/work/f2", "/work/f3")
	if strings.Contains(body, "/work/f1</code>") {
		t.Errorf("compare at step 2 lists /work/f1, the same in both")
	}

	for _, bad := range []string{"0", "5", "x"} {
		if res, body := get(t, s, http.MethodGet, "/compare?a=ra&b=rb&step="+bad); res.StatusCode != http.StatusBadRequest {
			t.Errorf("step=%s: %d, want 400\n%s", bad, res.StatusCode, body)
		}
	}

	body = mustGet(t, s, "/compare?a=ra&b=rc")
	contains(t, "compare ra rc", body, "Files at step 3", "252 paths differ", "/work/many/000", "and 52 more",
		"polyloop diff ra rc --files --step 3")
	if strings.Contains(body, "/work/many/249") {
		t.Errorf("compare ra rc lists more than 200 paths")
	}

	// Snapshots the store does not hold: the rest of the comparison is
	// still shown, the section says why it has no list.
	lost, _ := newServer(t, view.Options{Store: st, Snapshots: snapshotstore.NewMemory()})
	contains(t, "compare with lost snapshots", mustGet(t, lost, "/compare?a=ra&b=rb"), "the snapshots could not be read", "First divergence")

	plain, _ := newServer(t, view.Options{Store: st})
	if body := mustGet(t, plain, "/compare?a=ra&b=rb"); strings.Contains(body, `id="files"`) {
		t.Errorf("a view without a snapshot store shows the files section")
	}
}
