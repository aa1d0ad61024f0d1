package sqlitestore_test

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

// child is this test binary run again as a child process for one test,
// which prints "ready" on its stdout once it has opened its store, and then
// lines of its own protocol (see childStore).
type child struct {
	cmd    *exec.Cmd
	out    *bufio.Reader // the child's stdout after "ready"
	stderr lockedBuffer
}

// startChild runs the test binary again for test alone, with env added to
// its environment, and waits until the child prints "ready".
func startChild(t *testing.T, test string, env ...string) *child {
	t.Helper()
	c := &child{cmd: exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1")}
	// GORACE: a race-enabled child otherwise sleeps a second at exit.
	c.cmd.Env = append(append(os.Environ(), env...), "GORACE=atexit_sleep_ms=0")
	c.cmd.Stderr = &c.stderr
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.cmd.Process.Kill() }) // a no-op once the child has exited
	c.out = bufio.NewReader(out)
	if line, err := c.out.ReadString('\n'); err != nil || line != "ready\n" {
		c.cmd.Process.Kill()
		c.cmd.Wait()
		t.Fatalf("child did not get ready: %q, %v; stderr: %s", line, err, c.stderr.String())
	}
	return c
}

// next returns the child's next line on stdout, without its newline.
func (c *child) next() (string, error) {
	line, err := c.out.ReadString('\n')
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(line, "\n"), nil
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	return len(p), nil
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
