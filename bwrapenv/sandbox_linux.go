//go:build linux

package bwrapenv

import (
	"bufio"
	"bytes"
	"context"
	"encoding/gob"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/polyloop/polyloop"
)

// sandbox is one running bwrap and the init inside it.
type sandbox struct {
	cmd     *exec.Cmd
	w       *bufio.Writer
	enc     *gob.Encoder
	stdin   io.Closer
	wmu     sync.Mutex
	mu      sync.Mutex
	pending map[uint64]chan response
	nextID  uint64
	stdout  *os.File      // the read end of the init's output
	done    chan struct{} // closed when the init's output ends
	stderr  *tail
	waitErr error
}

// sandboxConfig is what one sandbox is started with.
type sandboxConfig struct {
	bwrap   string
	rootfs  string // the image's root filesystem
	rw      string // holds upper/ and work/
	network polyloop.NetworkPolicy
	mounts  []polyloop.EnvMount
	setup   setup
	cgroup  *cgroup
	// started, when set, is told bwrap's pid as soon as it runs (before
	// the sandbox serves): the state file names it, so that Prune finds
	// bwrap's process group even when the driver dies during the start.
	started func(pid int)
}

// bwrapArgs are the options of bwrap, passed through a file descriptor
// (--args) so that no command line of the sandbox shows host paths; the
// command (the init) follows them on bwrap's command line.
func (c sandboxConfig) bwrapArgs(ic initCommand) []string {
	a := []string{"--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
		"--uid", "0", "--gid", "0", "--hostname", "polyloop", "--die-with-parent", "--new-session",
		"--cap-add", "ALL"}
	if c.network.Normalize() != polyloop.NetworkOpen {
		a = append(a, "--unshare-net")
	}
	a = append(a, "--ro-bind", c.rootfs, stageLower, "--bind", c.rw, stageRW,
		"--proc", stageProc, "--dev", stageDev, "--dir", stageRoot)
	for _, b := range ic.binds {
		a = append(a, "--ro-bind", b[0], b[1])
	}
	for i, m := range c.mounts {
		a = append(a, "--ro-bind", m.Source, fmt.Sprintf("/.pl/mnt/%d", i))
	}
	return a
}

// startSandbox starts bwrap and waits until the init serves. With a
// cgroup, the sandbox is held (--block-fd) until its processes are in it.
func startSandbox(ctx context.Context, c sandboxConfig) (*sandbox, error) {
	ic, err := resolveInit()
	if err != nil {
		return nil, err
	}
	argsR, argsW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	args := c.bwrapArgs(ic)
	extra := []*os.File{argsR}
	var infoR, blockW *os.File
	if c.cgroup != nil {
		var infoW, blockR *os.File
		if infoR, infoW, err = os.Pipe(); err != nil {
			return nil, err
		}
		if blockR, blockW, err = os.Pipe(); err != nil {
			return nil, err
		}
		extra = append(extra, infoW, blockR)
		args = append([]string{"--info-fd", "4", "--block-fd", "5"}, args...)
		defer infoW.Close()
		defer blockR.Close()
	}
	cmd := exec.Command(c.bwrap, append([]string{"--args", "3", "--"}, ic.argv...)...)
	cmd.Env = []string{} // bwrap and its reaper (pid 1 inside) hold no variable of the driver
	cmd.ExtraFiles = extra
	// Its own process group: kill reaches bwrap's child too while that
	// child has not yet armed its parent-death signal (a bwrap killed
	// during its setup otherwise leaves the child waiting for it for ever,
	// holding the init's output open).
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	s := &sandbox{cmd: cmd, pending: map[uint64]chan response{}, done: make(chan struct{}), stderr: &tail{max: 4096}}
	// The sandbox's stdout is read from a pipe of our own, so that kill can
	// close our end if something inside still holds the other.
	cmd.Stderr = s.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, stdoutW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = stdoutW
	s.stdout = stdout
	if err := cmd.Start(); err != nil {
		argsR.Close()
		argsW.Close()
		stdout.Close()
		stdoutW.Close()
		return nil, fmt.Errorf("start %s: %w", c.bwrap, err)
	}
	stdoutW.Close()
	argsR.Close()
	if c.started != nil {
		c.started(cmd.Process.Pid)
	}
	go func() {
		argsW.Write([]byte(strings.Join(args, "\x00") + "\x00"))
		argsW.Close()
	}()
	s.stdin, s.w = stdin, bufio.NewWriter(stdin)
	s.enc = gob.NewEncoder(s.w)
	go s.readLoop(stdout)
	if c.cgroup != nil {
		if err := s.joinCgroup(c.cgroup, infoR, blockW); err != nil {
			s.kill()
			return nil, err
		}
	}
	r, err := s.call(ctx, request{Op: opSetup, Setup: &c.setup})
	if err == nil && r.Err != "" {
		err = errors.New(r.Err)
	}
	if err != nil {
		s.kill()
		return nil, fmt.Errorf("sandbox setup: %w", err)
	}
	return s, nil
}

// joinCgroup reads the sandbox's pid from bwrap's info, moves bwrap and
// it into the cgroup, and lets the sandbox go on.
func (s *sandbox) joinCgroup(cg *cgroup, infoR, blockW *os.File) error {
	defer infoR.Close()
	defer blockW.Close()
	var info struct {
		ChildPid int `json:"child-pid"`
	}
	if err := json.NewDecoder(infoR).Decode(&info); err != nil {
		return fmt.Errorf("read bwrap's info: %w%s", err, s.stderr.suffix())
	}
	for _, pid := range []int{s.cmd.Process.Pid, info.ChildPid} {
		if err := cg.add(pid); err != nil {
			return fmt.Errorf("move the sandbox into its cgroup: %w", err)
		}
	}
	// A command that runs the environment out of memory must be the one
	// the kernel kills, never the sandbox's pid 1 or the init (which
	// inherits this and gives its commands back the ordinary 0). Lowering
	// takes privilege: where the driver has none, this stays undone.
	os.WriteFile(fmt.Sprintf("/proc/%d/oom_score_adj", info.ChildPid), []byte("-1000"), 0)
	_, err := blockW.Write([]byte{1})
	return err
}

func (s *sandbox) readLoop(stdout io.Reader) {
	dec := gob.NewDecoder(bufio.NewReader(stdout))
	for {
		var r response
		if err := dec.Decode(&r); err != nil {
			break
		}
		s.mu.Lock()
		ch := s.pending[r.ID]
		delete(s.pending, r.ID)
		s.mu.Unlock()
		if ch != nil {
			ch <- r
		}
	}
	s.stdout.Close()
	s.waitErr = s.cmd.Wait()
	close(s.done)
}

// errSandboxExited is the cause of ErrEnvLost when the sandbox ended.
var errSandboxExited = errors.New("the sandbox exited")

// send writes a request and returns the channel its response comes on.
func (s *sandbox) send(req request) (uint64, chan response, error) {
	s.mu.Lock()
	if req.Op != opSetup {
		s.nextID++
		req.ID = s.nextID
	}
	ch := make(chan response, 1)
	s.pending[req.ID] = ch
	s.mu.Unlock()
	s.wmu.Lock()
	err := s.enc.Encode(req)
	if err == nil {
		err = s.w.Flush()
	}
	s.wmu.Unlock()
	if err != nil {
		s.mu.Lock()
		delete(s.pending, req.ID)
		s.mu.Unlock()
		return 0, nil, s.lost(err)
	}
	return req.ID, ch, nil
}

// call sends a request and waits for its response.
func (s *sandbox) call(ctx context.Context, req request) (response, error) {
	_, ch, err := s.send(req)
	if err != nil {
		return response{}, err
	}
	select {
	case r := <-ch:
		return r, nil
	case <-s.done:
		return response{}, s.lost(nil)
	case <-ctx.Done():
		return response{}, ctx.Err()
	}
}

// exec runs a command; when ctx is done first, it has the init kill it and
// waits (briefly) until it did.
func (s *sandbox) exec(ctx context.Context, r *execRequest) (response, error) {
	id, ch, err := s.send(request{Op: opExec, Exec: r})
	if err != nil {
		return response{}, err
	}
	select {
	case res := <-ch:
		return res, nil
	case <-s.done:
		return response{}, s.lost(nil)
	case <-ctx.Done():
	}
	_, cch, err := s.send(request{Op: opCancel, Target: id})
	if err == nil {
		select {
		case <-ch:
		case <-cch:
			<-ch
		case <-s.done:
		case <-time.After(5 * time.Second):
			return response{}, fmt.Errorf("%w (and the sandbox did not kill the command in 5s)", ctx.Err())
		}
	}
	return response{}, ctx.Err()
}

func (s *sandbox) lost(cause error) error {
	msg := errSandboxExited.Error()
	select {
	case <-s.done:
		if s.waitErr != nil {
			msg += " (" + s.waitErr.Error() + ")"
		}
	default:
	}
	if cause != nil {
		msg += ": " + cause.Error()
	}
	return fmt.Errorf("%w: %s%s", polyloop.ErrEnvLost, msg, s.stderr.suffix())
}

// stop ends the sandbox: its input closes (the init exits, and with it,
// as pid 1's child, everything inside), then bwrap is killed if it lingers.
func (s *sandbox) stop() {
	s.stdin.Close()
	select {
	case <-s.done:
	case <-time.After(2 * time.Second):
		s.kill()
	}
}

// kill ends the sandbox now. Its input closes too: bwrap killed before its
// child set its parent-death signal leaves the init running, and the init
// ends when its input does.
func (s *sandbox) kill() {
	if s.stdin != nil {
		s.stdin.Close()
	}
	if s.cmd.Process != nil {
		syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL) // the group: bwrap and a child still in it
		s.cmd.Process.Kill()
	}
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		// Something that left the group holds the init's output open:
		// stop reading it, so that the sandbox is waited for.
		s.stdout.Close()
		<-s.done
	}
}

func (s *sandbox) pid() int { return s.cmd.Process.Pid }

// tail keeps the last max bytes written to it (bwrap's and the init's
// standard error), for error messages.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = t.buf[len(t.buf)-t.max:]
	}
	return len(p), nil
}

func (t *tail) suffix() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.TrimSpace(string(bytes.ToValidUTF8(t.buf, nil)))
	if s == "" {
		return ""
	}
	return " (sandbox said: " + strconv.Quote(s) + ")"
}
