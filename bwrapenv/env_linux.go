//go:build linux

package bwrapenv

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/envsnap"
	"github.com/polyloop/polyloop/internal/procstart"
)

// environment is one sandbox and its directory.
type environment struct {
	p       *Provider
	spec    polyloop.EnvSpec
	desc    polyloop.EnvDescription
	image   image
	dir     string
	skip    []string
	hostUID int
	cg      *cgroup
	// hostEnv are the host variables spec.HostEnv allowed, read at Create
	// (or when a pooled sandbox is taken): every exec carries them.
	hostEnv []string
	// counted: the sandbox holds one of the provider's rooms
	// (Provider.acquire) until its teardown gives it back.
	counted atomic.Bool

	mu        sync.Mutex // guards sb and destroyed
	sb        *sandbox
	destroyed bool

	snapMu sync.Mutex // one snapshot at a time (the writer is not concurrent)
	writer *envsnap.Writer
	// pristine: the environment holds its image only — created from the
	// image with no files copied in and no mounts (whose missing targets
	// the init would create), and nothing run, copied in or restored since
	// — so its upper layer is empty and a snapshot needs no walk of it.
	pristine atomic.Bool
}

var _ polyloop.Environment = (*environment)(nil)

func (e *environment) Description() polyloop.EnvDescription {
	d := e.desc
	d.Files = append([]polyloop.EnvFileDigest(nil), d.Files...)
	d.HostEnv = append([]string(nil), d.HostEnv...)
	d.Mounts = append([]polyloop.EnvMount(nil), d.Mounts...)
	if len(d.Files) == 0 {
		d.Files = nil
	}
	if len(d.HostEnv) == 0 {
		d.HostEnv = nil
	}
	if len(d.Mounts) == 0 {
		d.Mounts = nil
	}
	return d
}

func (e *environment) fail(op string, err error) error { return e.p.fail(op, e.spec.RunID, nil, err) }

// boot lays the upper directory (empty, or manifest m's) and starts the
// sandbox.
func (e *environment) boot(ctx context.Context, m *envsnap.Manifest) error {
	rw := filepath.Join(e.dir, "rw")
	if err := removeAll(rw); err != nil {
		return err
	}
	for _, d := range []string{"upper", "work"} {
		if err := os.MkdirAll(filepath.Join(rw, d), 0o755); err != nil {
			return err
		}
	}
	if m != nil {
		stats, err := applyUpper(ctx, e.p.opts.Snapshots, *m, filepath.Join(rw, "upper"), e.hostUID)
		if err != nil {
			return err
		}
		e.writer.Primed(*m, stats)
	} else if e.writer != nil { // a pooled sandbox has none until a run takes it
		e.writer.Primed(envsnap.Manifest{}, nil)
	}
	cfg := sandboxConfig{bwrap: e.p.opts.Bwrap, rootfs: e.image.rootfs, rw: rw, network: e.spec.Network,
		mounts: e.spec.Mounts, cgroup: e.cg, setup: setup{DefaultEnv: defaultEnv}}
	for i, mt := range e.spec.Mounts {
		cfg.setup.Mounts = append(cfg.setup.Mounts, mountPoint{Staging: fmt.Sprintf("/.pl/mnt/%d", i), Target: path.Clean(mt.Target)})
	}
	cfg.started = func(pid int) {
		st := e.state()
		st.BwrapPID, st.BwrapStart = pid, procstart.Of(pid)
		writeState(e.dir, st) // best effort: the state after the start is written below
	}
	sb, err := startSandbox(ctx, cfg)
	if err != nil {
		return err
	}
	e.sb = sb
	return writeState(e.dir, e.state())
}

// hostEnv reads the allowed variables of the driving process.
func hostEnv(names []string) []string {
	var out []string
	for _, n := range names {
		if v, ok := os.LookupEnv(n); ok {
			out = append(out, n+"="+v)
		}
	}
	return out
}

// removeAll removes a directory the overlay wrote (its work directory has
// a subdirectory without permissions).
func removeAll(dir string) error {
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o700)
		}
		return nil
	})
	if err := os.RemoveAll(dir); err != nil {
		filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if d != nil && d.IsDir() {
				os.Chmod(p, 0o700)
			}
			return nil
		})
		return os.RemoveAll(dir)
	}
	return nil
}

// current returns the running sandbox, or ErrEnvLost.
func (e *environment) current() (*sandbox, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.destroyed || e.sb == nil {
		return nil, fmt.Errorf("%w: destroyed", polyloop.ErrEnvLost)
	}
	return e.sb, nil
}

func (e *environment) Exec(ctx context.Context, req polyloop.ExecRequest) (polyloop.ExecResult, error) {
	if err := req.Validate(); err != nil {
		return polyloop.ExecResult{}, e.p.fail("exec", e.spec.RunID, polyloop.ErrEnvInvalid, err)
	}
	e.pristine.Store(false) // before the command can write anything
	if err := ctx.Err(); err != nil {
		return polyloop.ExecResult{}, e.fail("exec", err)
	}
	sb, err := e.current()
	if err != nil {
		return polyloop.ExecResult{}, e.fail("exec", err)
	}
	limit := req.OutputLimit
	if limit <= 0 {
		limit = polyloop.DefaultExecOutputLimit
	}
	dir := cmp.Or(req.Dir, e.spec.WorkDir, "/")
	env := append(append([]string(nil), e.hostEnv...), req.Env...)
	r, err := sb.exec(ctx, &execRequest{Argv: append([]string(nil), req.Argv...), Dir: dir, Env: env,
		Stdin: req.Stdin, Timeout: req.Timeout, OutputLimit: limit})
	if err != nil {
		return polyloop.ExecResult{}, e.fail("exec", err)
	}
	if r.Invalid || r.Exec == nil {
		return polyloop.ExecResult{}, e.fail("exec", fmt.Errorf("the sandbox refused the request: %s", r.Err))
	}
	x := r.Exec
	return polyloop.ExecResult{ExitCode: x.ExitCode, Stdout: x.Stdout, Stderr: x.Stderr,
		StdoutDropped: x.StdoutDropped, StderrDropped: x.StderrDropped, TimedOut: x.TimedOut}, nil
}

func (e *environment) CopyIn(ctx context.Context, dir string, tarStream io.Reader) error {
	if !path.IsAbs(dir) {
		return e.p.fail("copy_in", e.spec.RunID, polyloop.ErrEnvInvalid, fmt.Errorf("%q is not an absolute path", dir))
	}
	data, err := io.ReadAll(tarStream)
	if err != nil {
		return e.p.fail("copy_in", e.spec.RunID, polyloop.ErrEnvInvalid, fmt.Errorf("read the tar stream: %w", err))
	}
	return e.copyIn(ctx, dir, data)
}

func (e *environment) copyIn(ctx context.Context, dir string, data []byte) error {
	e.pristine.Store(false)
	sb, err := e.current()
	if err == nil {
		var r response
		if r, err = sb.call(ctx, request{Op: opCopyIn, Path: dir, Data: data}); err == nil && r.Err != "" {
			err = errors.New(r.Err)
		}
	}
	if err != nil {
		return e.fail("copy_in", err)
	}
	return nil
}

func (e *environment) copyFiles(ctx context.Context, files []polyloop.EnvFile) error {
	data, err := tarFiles(files)
	if err != nil {
		return err
	}
	return e.copyIn(ctx, "/", data)
}

func (e *environment) CopyOut(ctx context.Context, p string, w io.Writer) error {
	if !path.IsAbs(p) {
		return e.p.fail("copy_out", e.spec.RunID, polyloop.ErrEnvInvalid, fmt.Errorf("%q is not an absolute path", p))
	}
	sb, err := e.current()
	if err != nil {
		return e.fail("copy_out", err)
	}
	r, err := sb.call(ctx, request{Op: opCopyOut, Path: p})
	switch {
	case err != nil:
		return e.fail("copy_out", err)
	case r.NotExist:
		return &polyloop.EnvOpError{Op: "copy_out", Backend: Backend, RunID: e.spec.RunID, Err: fmt.Errorf("%s: %w", p, fs.ErrNotExist)}
	case r.Err != "":
		return e.fail("copy_out", errors.New(r.Err))
	}
	if _, err := io.Copy(w, bytes.NewReader(r.Data)); err != nil {
		return &polyloop.EnvOpError{Op: "copy_out", Backend: Backend, RunID: e.spec.RunID, Err: err}
	}
	return nil
}

func (e *environment) Snapshot(ctx context.Context) (polyloop.EnvSnapshot, error) {
	if _, err := e.current(); err != nil {
		return "", e.fail("snapshot", err)
	}
	e.snapMu.Lock()
	defer e.snapMu.Unlock()
	var scanned []envsnap.Scanned // a pristine environment's: none, without a walk
	if !e.pristine.Load() {
		var err error
		if scanned, err = scanUpper(filepath.Join(e.dir, "rw", "upper"), e.skip, e.hostUID); err != nil {
			return "", e.fail("snapshot", err)
		}
	}
	ref, err := e.writer.Write(ctx, scanned)
	if err != nil {
		return "", e.fail("snapshot", err)
	}
	return ref, nil
}

func (e *environment) Restore(ctx context.Context, ref polyloop.EnvSnapshot) error {
	if _, err := e.current(); err != nil {
		return e.fail("restore", err)
	}
	m, err := envsnap.LoadFor(ctx, e.p.opts.Snapshots, ref, e.desc.Image)
	if err != nil {
		return e.fail("restore", err)
	}
	e.snapMu.Lock()
	defer e.snapMu.Unlock()
	e.pristine.Store(false)
	e.mu.Lock()
	sb := e.sb
	e.sb = nil
	e.mu.Unlock()
	sb.stop()
	if err := e.boot(ctx, &m); err != nil {
		return e.p.fail("restore", e.spec.RunID, polyloop.ErrEnvLost, err)
	}
	return nil
}

func (e *environment) Destroy(ctx context.Context) error {
	e.mu.Lock()
	if e.destroyed {
		e.mu.Unlock()
		return nil
	}
	e.destroyed = true
	e.mu.Unlock()
	if e.p.opts.DestroyInBackground {
		e.p.mu.Lock()
		closed := e.p.closed
		if !closed {
			e.p.destroyLocked(e)
		}
		e.p.mu.Unlock()
		if !closed {
			return nil
		}
	}
	if err := e.teardown(); err != nil {
		return e.fail("destroy", err)
	}
	return nil
}

// shutdown begins ending the sandbox without waiting: its input closes,
// and the init kills every command and exits (and with it, as pid 1's
// child, everything inside). The sandbox no longer serves.
func (e *environment) shutdown() {
	e.mu.Lock()
	sb := e.sb
	e.mu.Unlock()
	if sb != nil {
		sb.stdin.Close()
	}
}

// teardown stops the sandbox and removes the cgroup and the directory;
// then the sandbox's room in the provider's count is free.
func (e *environment) teardown() error {
	e.mu.Lock()
	sb := e.sb
	e.sb = nil
	e.mu.Unlock()
	if sb != nil {
		sb.stop()
	}
	if e.cg != nil {
		e.cg.remove()
	}
	var err error
	if e.dir != "" {
		err = removeAll(e.dir)
	}
	if e.counted.CompareAndSwap(true, false) {
		e.p.release()
	}
	return err
}
