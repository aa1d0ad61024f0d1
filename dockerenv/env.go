package dockerenv

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/envsnap"
)

// environment is one container.
type environment struct {
	p       *Provider
	spec    polyloop.EnvSpec
	desc    polyloop.EnvDescription
	image   image
	hostEnv []string
	skip    []string

	mu        sync.Mutex // one call at a time: a timeout kills the container
	id        string
	attach    *client.HijackedResponse // pid 1's stdin: the container's life line
	destroyed bool
	writer    *envsnap.Writer
}

var _ polyloop.Environment = (*environment)(nil)

func (e *environment) Description() polyloop.EnvDescription {
	d := e.desc
	d.Files = append([]polyloop.EnvFileDigest(nil), d.Files...)
	if len(d.Files) == 0 {
		d.Files = nil
	}
	d.HostEnv = append([]string(nil), d.HostEnv...)
	if len(d.HostEnv) == 0 {
		d.HostEnv = nil
	}
	d.Mounts = append([]polyloop.EnvMount(nil), d.Mounts...)
	if len(d.Mounts) == 0 {
		d.Mounts = nil
	}
	return d
}

// newContainer creates and starts a container from the image, with the
// files of m (nil: none) copied in.
func (e *environment) newContainer(ctx context.Context, m *envsnap.Manifest) error {
	init := true
	hc := &container.HostConfig{Init: &init, SecurityOpt: []string{"no-new-privileges"}}
	if e.spec.Network.Normalize() == polyloop.NetworkNone {
		hc.NetworkMode = "none"
	}
	l := e.spec.Limits
	hc.Resources.NanoCPUs = int64(l.CPUs * 1e9)
	if l.MemoryBytes > 0 {
		hc.Resources.Memory, hc.Resources.MemorySwap = l.MemoryBytes, l.MemoryBytes
	}
	if l.PIDs > 0 {
		pids := l.PIDs
		hc.Resources.PidsLimit = &pids
	}
	for _, mt := range e.spec.Mounts {
		hc.Binds = append(hc.Binds, mt.Source+":"+path.Clean(mt.Target)+":ro")
	}
	cfg := &container.Config{Image: e.image.id, Cmd: []string{"sh", "-c", "read _ || true"}, OpenStdin: true, StdinOnce: true,
		AttachStdin: true, WorkingDir: e.spec.WorkDir, Hostname: "polyloop",
		Labels: map[string]string{LabelEnv: "1", LabelRunID: e.spec.RunID, LabelDriver: driverLabel()}}
	res, err := e.p.cli.ContainerCreate(ctx, client.ContainerCreateOptions{Config: cfg, HostConfig: hc})
	if err != nil {
		return err
	}
	e.id = res.ID
	if err := e.start(ctx); err != nil {
		return err
	}
	e.writer.Primed(envsnap.Manifest{}, nil)
	if m != nil {
		return e.apply(ctx, *m)
	}
	return nil
}

// start attaches to pid 1's standard input and starts the container.
func (e *environment) start(ctx context.Context) error {
	at, err := e.p.cli.ContainerAttach(ctx, e.id, client.ContainerAttachOptions{Stream: true, Stdin: true})
	if err != nil {
		return err
	}
	if _, err := e.p.cli.ContainerStart(ctx, e.id, client.ContainerStartOptions{}); err != nil {
		at.Close()
		return err
	}
	e.attach = &at.HijackedResponse
	return nil
}

// restart ends every process (the Engine cannot kill one exec) and starts
// the container again: its filesystem stays.
func (e *environment) restart() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if e.attach != nil {
		e.attach.Close()
		e.attach = nil
	}
	if _, err := e.p.cli.ContainerKill(ctx, e.id, client.ContainerKillOptions{}); err != nil && !cerrdefs.IsConflict(err) {
		return err
	}
	wait := e.p.cli.ContainerWait(ctx, e.id, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	select {
	case <-wait.Result:
	case err := <-wait.Error:
		return err
	}
	return e.start(ctx)
}

func (e *environment) live() error {
	if e.destroyed {
		return fmt.Errorf("%w: destroyed", polyloop.ErrEnvLost)
	}
	return nil
}

func (e *environment) Exec(ctx context.Context, req polyloop.ExecRequest) (polyloop.ExecResult, error) {
	if err := req.Validate(); err != nil {
		return polyloop.ExecResult{}, fail("exec", e.spec.RunID, fmt.Errorf("%w: %v", polyloop.ErrEnvInvalid, err))
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.live(); err != nil {
		return polyloop.ExecResult{}, fail("exec", e.spec.RunID, err)
	}
	r, err := e.exec(ctx, req)
	if err != nil {
		return polyloop.ExecResult{}, fail("exec", e.spec.RunID, err)
	}
	return r, nil
}

// exec runs one command; past its timeout, or when ctx is done, the
// container is killed and started again.
func (e *environment) exec(ctx context.Context, req polyloop.ExecRequest) (polyloop.ExecResult, error) {
	limit := req.OutputLimit
	if limit <= 0 {
		limit = polyloop.DefaultExecOutputLimit
	}
	dir := req.Dir
	if dir == "" {
		dir = e.spec.WorkDir
	}
	env := polyloop.CommandEnv(e.image.env, e.hostEnv, req.Env)
	cr, err := e.p.cli.ExecCreate(ctx, e.id, client.ExecCreateOptions{Cmd: req.Argv, Env: env, WorkingDir: dir,
		AttachStdin: true, AttachStdout: true, AttachStderr: true})
	if err != nil {
		return polyloop.ExecResult{}, err
	}
	at, err := e.p.cli.ExecAttach(ctx, cr.ID, client.ExecAttachOptions{})
	if err != nil {
		return polyloop.ExecResult{}, err
	}
	defer at.Close()
	stdout, stderr := &capped{limit: limit}, &capped{limit: limit}
	done := make(chan error, 1)
	go func() {
		if len(req.Stdin) > 0 {
			at.Conn.Write(req.Stdin)
		}
		if cw, ok := at.Conn.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		}
		_, err := stdcopy.StdCopy(stdout, stderr, at.Reader)
		done <- err
	}()
	var timeout <-chan time.Time
	if req.Timeout > 0 {
		t := time.NewTimer(req.Timeout)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case err := <-done:
		if err != nil {
			return polyloop.ExecResult{}, err
		}
	case <-timeout:
		at.Close()
		if err := e.restart(); err != nil {
			return polyloop.ExecResult{}, fmt.Errorf("kill the timed-out command: %w", err)
		}
		return polyloop.ExecResult{ExitCode: -1, TimedOut: true, Stdout: stdout.buf, Stderr: stderr.buf,
			StdoutDropped: stdout.dropped, StderrDropped: stderr.dropped}, nil
	case <-ctx.Done():
		at.Close()
		if err := e.restart(); err != nil {
			return polyloop.ExecResult{}, fmt.Errorf("%w (and killing the command failed: %v)", ctx.Err(), err)
		}
		return polyloop.ExecResult{}, ctx.Err()
	}
	ins, err := e.p.cli.ExecInspect(ctx, cr.ID, client.ExecInspectOptions{})
	if err != nil {
		return polyloop.ExecResult{}, err
	}
	return polyloop.ExecResult{ExitCode: ins.ExitCode, Stdout: stdout.buf, Stderr: stderr.buf,
		StdoutDropped: stdout.dropped, StderrDropped: stderr.dropped}, nil
}

// capped keeps the first limit bytes written and counts the rest.
type capped struct {
	limit   int
	buf     []byte
	dropped int64
}

func (c *capped) Write(p []byte) (int, error) {
	keep := min(len(p), c.limit-len(c.buf))
	c.buf = append(c.buf, p[:keep]...)
	c.dropped += int64(len(p) - keep)
	return len(p), nil
}

func (e *environment) CopyIn(ctx context.Context, dir string, tarStream io.Reader) error {
	if !path.IsAbs(dir) {
		return fail("copy_in", e.spec.RunID, fmt.Errorf("%w: %q is not an absolute path", polyloop.ErrEnvInvalid, dir))
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.live(); err != nil {
		return fail("copy_in", e.spec.RunID, err)
	}
	if err := e.copyIn(ctx, dir, tarStream); err != nil {
		return fail("copy_in", e.spec.RunID, err)
	}
	return nil
}

// copyIn makes dir and extracts the tar stream under it.
func (e *environment) copyIn(ctx context.Context, dir string, tarStream io.Reader) error {
	r, err := e.exec(ctx, polyloop.ExecRequest{Argv: []string{"mkdir", "-p", dir}})
	if err != nil {
		return err
	}
	if r.ExitCode != 0 {
		return fmt.Errorf("mkdir -p %s: %s", dir, r.Stderr)
	}
	_, err = e.p.cli.CopyToContainer(ctx, e.id, client.CopyToContainerOptions{DestinationPath: dir, Content: tarStream, CopyUIDGID: true})
	return err
}

func (e *environment) CopyOut(ctx context.Context, p string, w io.Writer) error {
	if !path.IsAbs(p) {
		return fail("copy_out", e.spec.RunID, fmt.Errorf("%w: %q is not an absolute path", polyloop.ErrEnvInvalid, p))
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.live(); err != nil {
		return fail("copy_out", e.spec.RunID, err)
	}
	res, err := e.p.cli.CopyFromContainer(ctx, e.id, client.CopyFromContainerOptions{SourcePath: p})
	if cerrdefs.IsNotFound(err) {
		if _, ierr := e.p.cli.ContainerInspect(ctx, e.id, client.ContainerInspectOptions{}); ierr == nil {
			return &polyloop.EnvOpError{Op: "copy_out", Backend: Backend, RunID: e.spec.RunID, Err: fmt.Errorf("%s: %w", p, fs.ErrNotExist)}
		}
	}
	if err != nil {
		return fail("copy_out", e.spec.RunID, err)
	}
	defer res.Content.Close()
	if _, err := io.Copy(w, res.Content); err != nil {
		return &polyloop.EnvOpError{Op: "copy_out", Backend: Backend, RunID: e.spec.RunID, Err: err}
	}
	return nil
}

func (e *environment) Restore(ctx context.Context, ref polyloop.EnvSnapshot) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.live(); err != nil {
		return fail("restore", e.spec.RunID, err)
	}
	m, err := envsnap.LoadFor(ctx, e.p.store, ref, e.desc.Image)
	if err != nil {
		return fail("restore", e.spec.RunID, err)
	}
	e.remove()
	if err := e.newContainer(ctx, &m); err != nil {
		e.destroyed = true
		e.remove()
		return fail("restore", e.spec.RunID, fmt.Errorf("%w: %v", polyloop.ErrEnvLost, err))
	}
	return nil
}

func (e *environment) Destroy(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.destroyed {
		return nil
	}
	e.destroyed = true
	if err := e.remove(); err != nil {
		return fail("destroy", e.spec.RunID, err)
	}
	return nil
}

// remove removes the container, whatever its state.
func (e *environment) remove() error {
	if e.attach != nil {
		e.attach.Close()
		e.attach = nil
	}
	if e.id == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := e.p.cli.ContainerRemove(ctx, e.id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
	if cerrdefs.IsNotFound(err) {
		err = nil
	}
	e.id = ""
	return err
}

// filesTar is a tar stream of files, named from the root.
func filesTar(files []polyloop.EnvFile) io.Reader {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		tw.WriteHeader(&tar.Header{Name: path.Clean(f.Path)[1:], Mode: int64(f.Perm()), Size: int64(len(f.Content)),
			Typeflag: tar.TypeReg, ModTime: time.Unix(0, 0)})
		tw.Write(f.Content)
	}
	tw.Close()
	return &buf
}
