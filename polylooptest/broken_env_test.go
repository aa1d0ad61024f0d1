//go:build linux

package polylooptest

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/bwrapenv"
	"github.com/polyloop/polyloop/snapshotstore"
)

// envFaults are the ways faultyEnv breaks the environment contract; the
// zero value is the sandbox backend as it is.
type envFaults struct {
	nonZeroIsError  bool // a non-zero exit is an error
	mixStreams      bool // stderr is appended to stdout
	dropStdin       bool // stdin is not given
	ignoreTimeout   bool // the timeout is not enforced
	timeoutLeaves   bool // the call returns at the timeout, the command goes on
	ignoreCancel    bool // a cancelled context is not honoured
	cancelLeaves    bool // a cancelled call returns, the command goes on
	noOutputLimit   bool // all output is kept
	emptyCopyOut    bool // CopyOut writes nothing
	missingIsFailed bool // CopyOut of a missing path is a failure of the environment
	noFiles         bool // the spec's files are not copied in
	nameNotDigest   bool // the description names the image, not its digest
	staleSnapshot   bool // Snapshot returns the first snapshot ever taken
	restoreNoop     bool // Restore does nothing
	ignoreFrom      bool // Create ignores From
	unknownRestores bool // Restore of an unknown snapshot succeeds
	leakEnv         bool // every command gets the driver's variables
	noHostEnv       bool // HostEnv is ignored
	destroyNoop     bool // Destroy does nothing
	imageFallback   bool // a missing image falls back to "busybox"
	invalidIsLost   bool // a malformed request is ErrEnvLost
	noLimits        bool // limits are ignored
	sharedResult    bool // concurrent Execs share one result slot
	oneEnv          bool // every Create of a provider returns its first environment
	workDirNotMade  bool // a WorkDir the image lacks is not made (execs cannot start)
	recycle         bool // a destroyed environment goes back to a pool, and Create hands it out again
}

type faultyEnvProvider struct {
	envFaults
	inner *bwrapenv.Provider
	mu    sync.Mutex
	first polyloop.Environment
	pool  []polyloop.Environment // recycle: destroyed environments, handed out again
}

type faultyEnv struct {
	envFaults
	inner polyloop.Environment
	mu    sync.Mutex
	first polyloop.EnvSnapshot
	slot  polyloop.ExecResult
	image string
	// provider: recycle's pool.
	provider *faultyEnvProvider
}

func (p *faultyEnvProvider) Describe(ctx context.Context, spec polyloop.EnvSpec) (polyloop.EnvDescription, error) {
	return p.inner.Describe(ctx, p.spec(spec))
}

func (p *faultyEnvProvider) spec(spec polyloop.EnvSpec) polyloop.EnvSpec {
	if p.noFiles {
		spec.Files = nil
	}
	if p.ignoreFrom {
		spec.From = ""
	}
	if p.noHostEnv {
		spec.HostEnv = nil
	}
	if p.noLimits {
		spec.Limits = polyloop.EnvLimits{}
	}
	if p.imageFallback && spec.Image != "busybox" {
		spec.Image = "busybox"
	}
	return spec
}

func (p *faultyEnvProvider) Create(ctx context.Context, spec polyloop.EnvSpec) (polyloop.Environment, error) {
	if p.oneEnv {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.first != nil {
			return p.first, nil
		}
	}
	if p.recycle {
		p.mu.Lock()
		if n := len(p.pool); n > 0 {
			en := p.pool[n-1]
			p.pool = p.pool[:n-1]
			p.mu.Unlock()
			if len(spec.Files) > 0 {
				if err := en.CopyIn(ctx, "/", bytes.NewReader(tarOfFiles(spec.Files))); err != nil {
					return nil, err
				}
			}
			return &faultyEnv{envFaults: p.envFaults, inner: en, image: spec.Image, provider: p}, nil
		}
		p.mu.Unlock()
	}
	en, err := p.inner.Create(ctx, p.spec(spec))
	if err != nil {
		return nil, err
	}
	if p.workDirNotMade && spec.WorkDir != "" && spec.From == "" {
		if _, err := en.Exec(ctx, polyloop.ExecRequest{Argv: []string{"rm", "-rf", spec.WorkDir}, Dir: "/"}); err != nil {
			en.Destroy(ctx)
			return nil, err
		}
	}
	f := &faultyEnv{envFaults: p.envFaults, inner: en, image: spec.Image, provider: p}
	if p.oneEnv {
		p.first = f
	}
	return f, nil
}

func (f *faultyEnv) Description() polyloop.EnvDescription {
	d := f.inner.Description()
	if f.nameNotDigest {
		d.Image = f.image
	}
	return d
}

func (f *faultyEnv) Exec(ctx context.Context, req polyloop.ExecRequest) (polyloop.ExecResult, error) {
	if f.invalidIsLost && (len(req.Argv) == 0 || req.Dir != "" && req.Dir[0] != '/') {
		return polyloop.ExecResult{}, polyloop.ErrEnvLost
	}
	if f.dropStdin {
		req.Stdin = nil
	}
	if f.noOutputLimit {
		req.OutputLimit = 1 << 30
	}
	if f.leakEnv {
		req.Env = append(os.Environ(), req.Env...)
	}
	if f.ignoreTimeout {
		req.Timeout = 0
	}
	if f.ignoreCancel {
		ctx = context.WithoutCancel(ctx)
	}
	if f.timeoutLeaves && req.Timeout > 0 {
		timeout := req.Timeout
		req.Timeout = 0
		go f.inner.Exec(context.WithoutCancel(ctx), req)
		time.Sleep(timeout)
		return polyloop.ExecResult{ExitCode: -1, TimedOut: true}, nil
	}
	if f.cancelLeaves {
		ch := make(chan execOutcome, 1)
		go func() {
			r, err := f.inner.Exec(context.WithoutCancel(ctx), req)
			ch <- execOutcome{r, err}
		}()
		select {
		case o := <-ch:
			return o.r, o.err
		case <-ctx.Done():
			return polyloop.ExecResult{}, ctx.Err()
		}
	}
	r, err := f.inner.Exec(ctx, req)
	if f.sharedResult && err == nil {
		f.mu.Lock()
		f.slot = r
		f.mu.Unlock()
		time.Sleep(20 * time.Millisecond)
		f.mu.Lock()
		r = f.slot
		f.mu.Unlock()
	}
	if err == nil && f.nonZeroIsError && r.ExitCode != 0 {
		return r, fmt.Errorf("exit status %d", r.ExitCode)
	}
	if f.mixStreams {
		r.Stdout, r.Stderr = append(r.Stdout, r.Stderr...), nil
	}
	return r, err
}

func (f *faultyEnv) CopyIn(ctx context.Context, dir string, r io.Reader) error {
	return f.inner.CopyIn(ctx, dir, r)
}

func (f *faultyEnv) CopyOut(ctx context.Context, path string, w io.Writer) error {
	if f.emptyCopyOut {
		return f.inner.CopyOut(ctx, path, io.Discard)
	}
	err := f.inner.CopyOut(ctx, path, w)
	if f.missingIsFailed && err != nil {
		return errors.Join(polyloop.ErrEnvFailed, err)
	}
	return err
}

func (f *faultyEnv) Snapshot(ctx context.Context) (polyloop.EnvSnapshot, error) {
	ref, err := f.inner.Snapshot(ctx)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.first == "" {
		f.first = ref
	}
	if f.staleSnapshot {
		return f.first, err
	}
	return ref, err
}

func (f *faultyEnv) Restore(ctx context.Context, ref polyloop.EnvSnapshot) error {
	if f.restoreNoop {
		return nil
	}
	err := f.inner.Restore(ctx, ref)
	if f.unknownRestores && errors.Is(err, polyloop.ErrEnvSnapshotNotFound) {
		return nil
	}
	return err
}

func (f *faultyEnv) Destroy(ctx context.Context) error {
	if f.destroyNoop {
		return nil
	}
	if f.recycle {
		f.provider.mu.Lock()
		f.provider.pool = append(f.provider.pool, f.inner)
		f.provider.mu.Unlock()
		return nil
	}
	return f.inner.Destroy(ctx)
}

// envHarnessWith is the sandbox backend's harness with faults f; its
// environments are destroyed at the end of each check whatever the
// faults.
func envHarnessWith(t *testing.T, f envFaults) EnvHarness {
	images := os.Getenv("POLYLOOP_TEST_BWRAP_IMAGES")
	if images == "" {
		t.Skip("POLYLOOP_TEST_BWRAP_IMAGES is not set (.ci/env-images DIR builds the test image)")
	}
	newInner := func(t testing.TB, snaps string) *bwrapenv.Provider {
		store, err := snapshotstore.OpenDir(snaps)
		if err != nil {
			t.Fatal(err)
		}
		p, err := bwrapenv.New(bwrapenv.Options{Images: images, StateDir: filepath.Join(t.TempDir(), "envs"), Snapshots: store})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	var mu sync.Mutex
	snaps := map[polyloop.EnvProvider]string{}
	return EnvHarness{
		New: func(t testing.TB) polyloop.EnvProvider {
			dir := filepath.Join(t.TempDir(), "snaps")
			p := &faultyEnvProvider{envFaults: f, inner: newInner(t, dir)}
			t.Cleanup(func() { // recycle's pool, destroyed for good
				for _, en := range p.pool {
					en.Destroy(context.Background())
				}
			})
			mu.Lock()
			snaps[p] = dir
			mu.Unlock()
			return p
		},
		Reopen: func(t testing.TB, p polyloop.EnvProvider) polyloop.EnvProvider {
			mu.Lock()
			dir := snaps[p]
			mu.Unlock()
			return &faultyEnvProvider{envFaults: f, inner: newInner(t, dir)}
		},
		Image:  "busybox",
		Limits: true,
		Leftovers: func(t testing.TB, p polyloop.EnvProvider, run string) []string {
			if f.destroyNoop {
				return []string{"an environment Destroy left"}
			}
			return nil
		},
	}
}

func brokenEnvCases() []brokenCase {
	c := func(check string, r rule, f envFaults) brokenCase {
		return brokenCase{"EnvProvider", check, r, func(t *testing.T) outcome {
			h := envHarnessWith(t, f)
			return runNamed(t, envChecks, check, h, h.settings())
		}}
	}
	return []brokenCase{
		c("Exec", ruleEnvExec, envFaults{mixStreams: true}),
		c("Exec", ruleEnvExec, envFaults{dropStdin: true}),
		c("ExitIsResult", ruleEnvExitIsResult, envFaults{nonZeroIsError: true}),
		c("Timeout", ruleEnvTimeout, envFaults{ignoreTimeout: true}),
		c("Timeout", ruleEnvKillsCommand, envFaults{timeoutLeaves: true}),
		c("Cancelled", ruleCancelPromptly, envFaults{ignoreCancel: true}),
		c("Cancelled", ruleEnvKillsCommand, envFaults{cancelLeaves: true}),
		c("OutputLimit", ruleEnvOutputLimit, envFaults{noOutputLimit: true}),
		c("Copy", ruleEnvCopy, envFaults{emptyCopyOut: true}),
		c("Copy", ruleEnvCopy, envFaults{missingIsFailed: true}),
		c("Files", ruleEnvFiles, envFaults{noFiles: true}),
		c("Description", ruleEnvDescription, envFaults{nameNotDigest: true}),
		c("SnapshotRestore", ruleEnvSnapshot, envFaults{staleSnapshot: true}),
		c("SnapshotRestore", ruleEnvSnapshot, envFaults{restoreNoop: true}),
		c("CreateFrom", ruleEnvCreateFrom, envFaults{ignoreFrom: true}),
		c("NoProcesses", ruleEnvNoProcesses, envFaults{restoreNoop: true}),
		c("SnapshotNotFound", ruleEnvSnapMissing, envFaults{unknownRestores: true}),
		c("Isolated", ruleEnvIsolated, envFaults{leakEnv: true}),
		c("Allowed", ruleEnvAllowed, envFaults{noHostEnv: true}),
		c("Destroy", ruleEnvDestroy, envFaults{destroyNoop: true}),
		c("ImageNotFound", ruleEnvImageNotFound, envFaults{imageFallback: true}),
		c("Invalid", ruleEnvInvalid, envFaults{invalidIsLost: true}),
		c("Limits", ruleEnvLimits, envFaults{noLimits: true}),
		c("Concurrent", ruleConcurrentUse, envFaults{sharedResult: true}),
		c("Concurrent", ruleEnvRunsIsolated, envFaults{oneEnv: true}),
		c("WorkDir", ruleEnvWorkDir, envFaults{workDirNotMade: true}),
		c("Fresh", ruleEnvFresh, envFaults{recycle: true}),
	}
}

// tarOfFiles is a tar stream of files, at their paths under /.
func tarOfFiles(files []polyloop.EnvFile) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		tw.WriteHeader(&tar.Header{Name: f.Path[1:], Mode: 0o644, Size: int64(len(f.Content)), Typeflag: tar.TypeReg})
		tw.Write(f.Content)
	}
	tw.Close()
	return buf.Bytes()
}
