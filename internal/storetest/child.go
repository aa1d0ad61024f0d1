package storetest

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/polyloop/polyloop"
)

// Child is this test binary run again as a child process for one test,
// which prints "ready" on its stdout once it has opened its store, and then
// lines of its own protocol (see AckStore).
type Child struct {
	Cmd    *exec.Cmd
	Out    *bufio.Reader // the child's stdout after "ready"
	Stderr *LockedBuffer
}

// StartChild runs the test binary again for test alone, with env added to
// its environment, and waits until the child prints "ready".
func StartChild(t testing.TB, test string, env ...string) *Child {
	t.Helper()
	c := &Child{Cmd: exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1"), Stderr: &LockedBuffer{}}
	// GORACE: a race-enabled child otherwise sleeps a second at exit.
	c.Cmd.Env = append(append(os.Environ(), env...), "GORACE=atexit_sleep_ms=0")
	c.Cmd.Stderr = c.Stderr
	out, err := c.Cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Cmd.Process.Kill() }) // a no-op once the child has exited
	c.Out = bufio.NewReader(out)
	if line, err := c.Out.ReadString('\n'); err != nil || line != "ready\n" {
		c.Cmd.Process.Kill()
		c.Cmd.Wait()
		t.Fatalf("child did not get ready: %q, %v; stderr: %s", line, err, c.Stderr.String())
	}
	return c
}

// Next returns the child's next line on stdout, without its newline.
func (c *Child) Next() (string, error) {
	line, err := c.Out.ReadString('\n')
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(line, "\n"), nil
}

// LockedBuffer is a bytes buffer safe for concurrent writes.
type LockedBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *LockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	return len(p), nil
}

func (b *LockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

// AckStore is the store a child process runs on: it reports each Append on
// stdout, "try <last seq>" before handing it to the store and "ack <last
// seq>" once it returned nil — the write to the pipe is done before Append
// returns, so the parent knows of every acknowledgement even when the child
// is SIGKILLed right after — and calls its hooks around the child's Appends
// and reads.
//
// The runner calls a store from one goroutine, so the counter needs no lock.
type AckStore struct {
	polyloop.Store
	appends int // Appends so far
	// Before and After, when set, run before the kth Append (k from 1) is
	// handed to the store and after it returned (and was reported).
	Before, After func(k int)
	// AfterRead, when set, runs after each ReadRows and ReadRowsFrom.
	AfterRead func()
}

func (s *AckStore) Append(ctx context.Context, runID string, records []polyloop.Row) error {
	s.appends++
	if s.Before != nil {
		s.Before(s.appends)
	}
	if len(records) > 0 {
		fmt.Printf("try %d\n", records[len(records)-1].Seq)
	}
	err := s.Store.Append(ctx, runID, records)
	if err == nil && len(records) > 0 {
		fmt.Printf("ack %d\n", records[len(records)-1].Seq)
	}
	if s.After != nil {
		s.After(s.appends)
	}
	return err
}

func (s *AckStore) ReadRows(ctx context.Context, runID string) ([]polyloop.Row, error) {
	rows, err := s.Store.ReadRows(ctx, runID)
	if s.AfterRead != nil {
		s.AfterRead()
	}
	return rows, err
}

func (s *AckStore) ReadRowsFrom(ctx context.Context, runID string, from int64, limit int) ([]polyloop.Row, error) {
	rows, err := s.Store.ReadRowsFrom(ctx, runID, from, limit)
	if s.AfterRead != nil {
		s.AfterRead()
	}
	return rows, err
}
