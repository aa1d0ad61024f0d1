package sqlitestore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/storetest"
	"github.com/polyloop/polyloop/polylooptest"
	"github.com/polyloop/polyloop/sqlitestore"
)

const (
	envResumeChild = "POLYLOOP_RESUME_CHILD" // set in the child: the database path
	envResumeGo    = "POLYLOOP_RESUME_GO"    // set in the child: the file whose appearance lets it go on
)

// The two-process resume child's verdicts, its last line on stdout.
const (
	resumedOK   = "ok"
	lostToFence = "failed persistence=true conflict=true"
)

// resumeChild is the body of a child of TestTwoProcessesResume: it resumes
// the run, saying "read" after its first ReadLog and then waiting for the
// go file, and prints its verdict: "ok", or which of errors.As(err,
// **polyloop.PersistenceError) and errors.Is(err, polyloop.ErrSeqConflict)
// hold for the error Resume returned.
func resumeChild(path, goFile string) {
	s, err := sqlitestore.Open(path, nil)
	if err != nil {
		childFail("open", err)
	}
	var once sync.Once
	cs := &storetest.AckStore{Store: s, AfterRead: func() {
		once.Do(func() {
			fmt.Println("read")
			waitForFile(goFile)
		})
	}}
	fmt.Println("ready")
	w := crashWorkload(nil)
	res, err := w.Runner(cs).Resume(context.Background(), crashRun, w.Agent())
	if err == nil {
		if err := w.Check(res); err != nil {
			childFail("check", err)
		}
		fmt.Println(resumedOK)
	} else {
		var pe *polyloop.PersistenceError
		fmt.Printf("failed persistence=%t conflict=%t\n", errors.As(err, &pe), errors.Is(err, polyloop.ErrSeqConflict))
		fmt.Fprintln(os.Stderr, "child: resume:", err)
	}
	s.Close()
	os.Exit(0)
}

func waitForFile(path string) {
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			childFail("barrier", errors.New("the go file never appeared"))
		}
	}
}

// TestTwoProcessesResume: two processes resume the same interrupted run at
// once, both planning from the same log (each waits, after reading it, for
// the other to have read it too). Exactly one proceeds; the other stops
// with ErrSeqConflict inside a *polyloop.PersistenceError; the log stays
// valid for the planner and equivalent to the uninterrupted run's.
func TestTwoProcessesResume(t *testing.T) {
	if path := os.Getenv(envResumeChild); path != "" {
		resumeChild(path, os.Getenv(envResumeGo))
		return
	}
	if testing.Short() {
		t.Skip("re-executes the test binary; skipped with -short")
	}
	ref := referenceCrashLog(t)
	dir := t.TempDir()
	path, goFile := filepath.Join(dir, "runs.db"), filepath.Join(dir, "go")
	interrupt(t, path)
	var children []*storetest.Child
	for range 2 {
		c := storetest.StartChild(t, "TestTwoProcessesResume", envResumeChild+"="+path, envResumeGo+"="+goFile)
		if line, err := c.Next(); err != nil || line != "read" {
			t.Fatalf("child did not read the log: %q, %v; stderr: %s", line, err, c.Stderr.String())
		}
		children = append(children, c)
	}
	if err := os.WriteFile(goFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var verdicts []string
	for _, c := range children {
		verdicts = append(verdicts, verdict(t, c))
	}
	slices.Sort(verdicts)
	if want := []string{lostToFence, resumedOK}; !slices.Equal(verdicts, want) {
		t.Fatalf("verdicts %q, want %q", verdicts, want)
	}
	checkFinishedLike(t, path, ref)
}

// verdict reads a resume child's output to its end and returns its last
// line (after any "ack" lines), once the child has exited cleanly.
func verdict(t *testing.T, c *storetest.Child) string {
	t.Helper()
	last := ""
	for {
		line, err := c.Next()
		if err != nil {
			break
		}
		if !strings.HasPrefix(line, "ack ") && !strings.HasPrefix(line, "try ") {
			last = line
		}
	}
	if err := c.Cmd.Wait(); err != nil {
		t.Fatalf("child: %v; stderr: %s", err, c.Stderr.String())
	}
	return last
}

// checkFinishedLike checks that the run's log on path is a valid finished
// run, equivalent to ref.
func checkFinishedLike(t *testing.T, path string, ref []polyloop.Record) {
	t.Helper()
	s := open(t, path)
	l, err := polyloop.ReadLog(context.Background(), s, crashRun)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := polyloop.PlanResume(l)
	if err != nil || plan.Action != polyloop.PlanAlreadyFinished {
		t.Fatalf("log after the race: plan %+v, %v; want a valid finished run", plan, err)
	}
	if err := polylooptest.CheckEquivalent(l, polyloop.RunLog{Records: ref}); err != nil {
		t.Fatalf("log after the race differs from the reference: %v", err)
	}
}
