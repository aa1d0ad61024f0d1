//go:build linux

package sbinit

import (
	"bufio"
	"bytes"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/polyloop/polyloop/internal/envvars"
	"golang.org/x/sys/unix"
)

// The init serves execs and copies from inside the sandbox: bwrap runs the
// driver's own executable with Marker as its first argument, and this
// package's init function turns that process into the server before any
// main function runs. It lives as long as the environment and exits when
// its standard input (the driver's requests) closes — that is, when the
// driver is gone.
func init() {
	if len(os.Args) == 2 && os.Args[1] == Marker {
		os.Exit(serveInit(os.Stdin, os.Stdout))
	}
}

// Where bwrap puts what the init assembles into the environment's root.
const (
	StageLower = "/.pl/lower"
	StageRW    = "/.pl/rw" // holds upper/ and work/ (one mount, as overlayfs needs)
	StageProc  = "/.pl/proc"
	StageDev   = "/.pl/dev"
	StageRoot  = "/.pl/root"
)

type initServer struct {
	setup   Setup
	out     *gob.Encoder
	w       *bufio.Writer
	wmu     sync.Mutex
	spawn   chan spawnRequest
	mu      sync.Mutex
	running map[uint64]*running
	wg      sync.WaitGroup
}

type running struct {
	pid       int
	cancelled bool
}

type spawnRequest struct {
	cmd  *exec.Cmd
	done chan error
}

func serveInit(in io.Reader, out io.Writer) int {
	dec := gob.NewDecoder(bufio.NewReader(in))
	w := bufio.NewWriter(out)
	s := &initServer{out: gob.NewEncoder(w), w: w, running: map[uint64]*running{}}
	var first Request
	if err := dec.Decode(&first); err != nil || first.Op != OpSetup || first.Setup == nil {
		fmt.Fprintf(os.Stderr, "bwrapenv init: no setup request: %v\n", err)
		return 2
	}
	s.setup = *first.Setup
	if err := s.prepare(); err != nil {
		s.reply(Response{ID: 0, Err: err.Error()})
		return 2
	}
	s.reply(Response{ID: 0})
	for {
		var req Request
		if err := dec.Decode(&req); err != nil {
			s.killAll() // the driver is gone: so are its commands
			return 0
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.reply(s.handle(req))
		}()
	}
}

func (s *initServer) reply(r Response) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if err := s.out.Encode(r); err == nil {
		s.w.Flush()
	}
}

// prepare assembles the root (the overlay of the image and the
// environment's upper directory, /proc, /dev, the read-only mounts), enters
// it, makes this process undumpable (so that no command reads its memory,
// environment or root through /proc/1) and starts the spawner.
func (s *initServer) prepare() error {
	opts := "lowerdir=" + StageLower + ",upperdir=" + StageRW + "/upper,workdir=" + StageRW + "/work,userxattr"
	if err := unix.Mount("overlay", StageRoot, "overlay", 0, opts); err != nil {
		return fmt.Errorf("mount the overlay: %w", err)
	}
	binds := []MountPoint{{StageProc, "/proc"}, {StageDev, "/dev"}}
	for _, m := range append(binds, s.setup.Mounts...) {
		if err := bindInto(m, m.Staging != StageProc && m.Staging != StageDev); err != nil {
			return err
		}
	}
	if err := unix.Chroot(StageRoot); err != nil {
		return fmt.Errorf("enter the root: %w", err)
	}
	if err := os.Chdir("/"); err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("make the init undumpable: %w", err)
	}
	var err error
	s.spawn, err = startSpawner()
	return err
}

// bindInto binds m.Staging at m.Target under the root, read-only when ro.
func bindInto(m MountPoint, ro bool) error {
	dst := StageRoot + m.Target
	st, err := os.Stat(m.Staging)
	if err != nil {
		return err
	}
	if st.IsDir() {
		err = os.MkdirAll(dst, 0o755)
	} else if err = os.MkdirAll(path.Dir(dst), 0o755); err == nil {
		var f *os.File
		if f, err = os.OpenFile(dst, os.O_CREATE|os.O_RDONLY, 0o644); err == nil {
			f.Close()
		}
	}
	if err != nil {
		return fmt.Errorf("make the mount point %s: %w", m.Target, err)
	}
	if err := unix.Mount(m.Staging, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind %s: %w", m.Target, err)
	}
	if ro {
		flags := uintptr(unix.MS_REMOUNT | unix.MS_BIND | unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV)
		if err := unix.Mount("", dst, "", flags, ""); err != nil {
			return fmt.Errorf("make %s read-only: %w", m.Target, err)
		}
	}
	return nil
}

// startSpawner starts the goroutine, locked to its own thread, from which
// every command is forked: that thread alone gives up every capability
// (bounding set and all), so commands run as the sandbox's root with
// none, while the init keeps what it needs to copy files.
func startSpawner() (chan spawnRequest, error) {
	reqs := make(chan spawnRequest)
	ready := make(chan error)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread is only ever this one's
		if err := dropCapabilities(); err != nil {
			ready <- err
			return
		}
		ready <- nil
		for r := range reqs {
			r.done <- r.cmd.Start()
		}
	}()
	return reqs, <-ready
}

func dropCapabilities() error {
	raw, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		return fmt.Errorf("read the last capability: %w", err)
	}
	last, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		return err
	}
	for c := 0; c <= last; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("drop capabilities: %w", err)
	}
	return nil
}

func (s *initServer) handle(req Request) Response {
	switch req.Op {
	case OpExec:
		if req.Exec == nil || len(req.Exec.Argv) == 0 {
			return Response{ID: req.ID, Invalid: true, Err: "exec without argv"}
		}
		return Response{ID: req.ID, Exec: s.exec(req.ID, req.Exec)}
	case OpCancel:
		s.kill(req.Target, true)
		return Response{ID: req.ID}
	case OpCopyIn:
		if err := extractTar(req.Path, bytes.NewReader(req.Data)); err != nil {
			return errResponse(req.ID, err)
		}
		return Response{ID: req.ID}
	case OpCopyOut:
		var buf bytes.Buffer
		if err := writeTar(req.Path, &buf); err != nil {
			return errResponse(req.ID, err)
		}
		return Response{ID: req.ID, Data: buf.Bytes()}
	}
	return Response{ID: req.ID, Invalid: true, Err: "unknown operation " + strconv.Quote(req.Op)}
}

func errResponse(id uint64, err error) Response {
	return Response{ID: id, Err: err.Error(), NotExist: errors.Is(err, fs.ErrNotExist)}
}

func (s *initServer) kill(id uint64, cancelled bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.running[id]; r != nil {
		r.cancelled = r.cancelled || cancelled
		syscall.Kill(-r.pid, syscall.SIGKILL)
	}
}

func (s *initServer) killAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.running {
		syscall.Kill(-r.pid, syscall.SIGKILL)
	}
}

// exec runs one command in its own process group; the group is killed at
// the timeout, on cancellation, and when the command exits (so that what it
// left behind in its group does not outlive it).
func (s *initServer) exec(id uint64, r *ExecRequest) *ExecResult {
	env := envvars.Merge(s.setup.DefaultEnv, r.Env)
	dir := r.Dir
	if dir == "" {
		dir = "/"
	}
	file, err := lookPath(r.Argv[0], env)
	if err != nil {
		return &ExecResult{ExitCode: 127, Stderr: []byte(r.Argv[0] + ": " + err.Error() + "\n")}
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return &ExecResult{ExitCode: 126, Stderr: []byte(err.Error())}
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return &ExecResult{ExitCode: 126, Stderr: []byte(err.Error())}
	}
	cmd := &exec.Cmd{Path: file, Args: r.Argv, Dir: dir, Env: env, Stdin: bytes.NewReader(r.Stdin),
		Stdout: outW, Stderr: errW, SysProcAttr: &syscall.SysProcAttr{Setpgid: true}}
	limit := r.OutputLimit
	stdout, stderr := &capped{limit: limit}, &capped{limit: limit}
	done := make(chan error, 1)
	s.mu.Lock() // held across the fork: a cancellation finds the command registered
	s.spawn <- spawnRequest{cmd: cmd, done: done}
	err = <-done
	outW.Close()
	errW.Close()
	if err != nil {
		s.mu.Unlock()
		outR.Close()
		errR.Close()
		code := 126
		if errors.Is(err, fs.ErrNotExist) {
			code = 127
		}
		if st, serr := os.Stat(dir); serr != nil || !st.IsDir() {
			// Go names the program when the chdir before it failed.
			err = fmt.Errorf("working directory %s: %w", dir, fs.ErrNotExist)
		}
		return &ExecResult{ExitCode: code, Stderr: []byte(err.Error() + "\n")}
	}
	run := &running{pid: cmd.Process.Pid}
	s.running[id] = run
	s.mu.Unlock()
	// The init may run protected from the OOM killer (see joinCgroup):
	// its commands are not.
	os.WriteFile("/proc/"+strconv.Itoa(run.pid)+"/oom_score_adj", []byte("0"), 0)
	var readers sync.WaitGroup
	readers.Add(2)
	go func() { defer readers.Done(); stdout.drain(outR) }()
	go func() { defer readers.Done(); stderr.drain(errR) }()
	timedOut := false
	var timer *time.Timer
	if r.Timeout > 0 {
		timer = time.AfterFunc(r.Timeout, func() {
			s.mu.Lock()
			timedOut = !run.cancelled
			s.mu.Unlock()
			s.kill(id, false)
		})
	}
	// Wait without reaping, kill what is left of the group while the
	// command's pid still holds the group id, then reap.
	var info unix.Siginfo
	for {
		if err := unix.Waitid(unix.P_PID, run.pid, &info, unix.WEXITED|unix.WNOWAIT, nil); err != unix.EINTR {
			break
		}
	}
	syscall.Kill(-run.pid, syscall.SIGKILL)
	cmd.Wait()
	if timer != nil {
		timer.Stop()
	}
	s.mu.Lock()
	delete(s.running, id)
	to := timedOut
	s.mu.Unlock()
	// A process that left the group (setsid) may still hold the pipes:
	// stop reading a moment after the command ended.
	deadline := time.Now().Add(100 * time.Millisecond)
	outR.SetReadDeadline(deadline)
	errR.SetReadDeadline(deadline)
	readers.Wait()
	outR.Close()
	errR.Close()
	return &ExecResult{ExitCode: cmd.ProcessState.ExitCode(), Stdout: stdout.buf, Stderr: stderr.buf,
		StdoutDropped: stdout.dropped, StderrDropped: stderr.dropped, TimedOut: to}
}

// capped keeps the first limit bytes of a stream and counts the rest.
type capped struct {
	limit   int
	buf     []byte
	dropped int64
}

func (c *capped) drain(r io.Reader) {
	chunk := make([]byte, 32<<10)
	for {
		n, err := r.Read(chunk)
		keep := min(n, c.limit-len(c.buf))
		c.buf = append(c.buf, chunk[:keep]...)
		c.dropped += int64(n - keep)
		if err != nil {
			return
		}
	}
}

// lookPath finds file in the PATH of env, as a shell would.
func lookPath(file string, env []string) (string, error) {
	if strings.Contains(file, "/") {
		return file, nil
	}
	pathVar := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathVar = v
		}
	}
	for _, dir := range strings.Split(pathVar, ":") {
		if dir == "" {
			dir = "."
		}
		p := path.Join(dir, file)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", errors.New("command not found")
}
