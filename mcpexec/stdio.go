package mcpexec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/polyloop/polyloop/internal/procgroup"
)

// stdioTransport starts a stdio server in a process group of its own, tied
// to the life of this process (internal/procgroup.StartTied), so that a terminal's Ctrl-C, which signals
// the whole foreground group, reaches polyloop and not the server: the
// first Ctrl-C asks the run to stop at the next step boundary, and the call
// in flight must be able to finish. Closing the connection closes the
// server's stdin, waits up to terminate for it to exit, then sends SIGTERM
// to its group, waits again, and sends SIGKILL. Whenever the server exits,
// on its own or so, whatever it left in its group is killed; and if this
// process dies, its watchdog kills the whole group.
type stdioTransport struct {
	cmd       *exec.Cmd
	terminate time.Duration
}

func (t *stdioTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	t.cmd.WaitDelay = t.terminate // a process that escaped the group may hold stderr open
	stdin, err := t.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	// Not StdoutPipe: Wait would close it as soon as the server exits,
	// maybe before its last message is read.
	stdout, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	t.cmd.Stdout = w
	group, err := procgroup.StartTied(t.cmd)
	w.Close()
	if err != nil {
		stdout.Close()
		return nil, err
	}
	s := &server{cmd: t.cmd, group: group, stdin: stdin, stdout: stdout, terminate: t.terminate, exited: make(chan struct{})}
	go s.reap()
	// The connection ends by closing stdin first (server.Close), as the MCP
	// spec has it; stdout is closed once the server is gone.
	return (&mcp.IOTransport{Reader: io.NopCloser(stdout), Writer: s}).Connect(ctx)
}

// server is a running stdio server: the writer of the connection, whose
// Close ends the server.
type server struct {
	cmd       *exec.Cmd
	group     *procgroup.Group
	stdin     io.WriteCloser
	stdout    *os.File
	terminate time.Duration
	exited    chan struct{} // closed once the server is reaped
	waitErr   error         // its exit status, set before exited is closed

	once     sync.Once
	closeErr error
}

func (s *server) Write(p []byte) (int, error) { return s.stdin.Write(p) }

// reap waits for the server to exit, kills what it left in its group, and
// reaps it (Group.Wait). Where the exit can be awaited without reaping
// (Linux), the group is killed first, so that Wait does not wait for a
// leftover process holding the server's stderr.
func (s *server) reap() {
	s.waitErr = s.group.Wait()
	close(s.exited)
}

// Close ends the server: stdin closed, then SIGTERM and SIGKILL to its
// group, each after s.terminate. The error is the server's exit status, or
// why it could not be ended.
func (s *server) Close() error {
	s.once.Do(func() {
		s.closeErr = s.end()
		s.stdout.Close()
	})
	return s.closeErr
}

func (s *server) end() error {
	stdinErr := s.stdin.Close()
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		if s.exitedWithin(s.terminate) {
			return errors.Join(s.waitErr, closing(stdinErr))
		}
		s.group.Signal(sig)
	}
	if s.exitedWithin(s.terminate) {
		return errors.Join(s.waitErr, closing(stdinErr))
	}
	return fmt.Errorf("mcpexec: the server process %d did not exit after SIGKILL", s.cmd.Process.Pid)
}

func (s *server) exitedWithin(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-s.exited:
		return true
	case <-t.C:
		return false
	}
}

// closing is the error of closing the server's stdin, unless the server
// had already closed it by exiting.
func closing(err error) error {
	if err == nil || errors.Is(err, syscall.EPIPE) {
		return nil
	}
	return fmt.Errorf("closing stdin: %w", err)
}
