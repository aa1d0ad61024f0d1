package shellexec_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/polylooptest"
	"github.com/polyloop/polyloop/shellexec"
)

func TestConformance(t *testing.T) {
	// Each subtest's executor works in its own directory, so CancelInFlight
	// and DeadlineInFlight each write and check their own pid file.
	var mu sync.Mutex
	dirs := map[testing.TB]string{}
	newExecutor := func(tb testing.TB, dir string) polyloop.ActionExecutor {
		e, err := shellexec.New(shellexec.Options{Dir: dir})
		if err != nil {
			tb.Fatal(err)
		}
		return e
	}
	polylooptest.TestActionExecutor(t, polylooptest.ExecutorHarness{
		New: func(tb testing.TB) polyloop.ActionExecutor {
			dir := tb.TempDir()
			mu.Lock()
			dirs[tb] = dir
			mu.Unlock()
			return newExecutor(tb, dir)
		},
		NewBrokenEnv: func(tb testing.TB) polyloop.ActionExecutor {
			return newExecutor(tb, filepath.Join(tb.TempDir(), "removed"))
		},
		Succeeds:    polyloop.Action{Code: "echo ok", Lang: "bash"},
		Fails:       polyloop.Action{Code: "ls /polylooptest/missing", Lang: "bash"},
		InvalidArgs: polyloop.Action{CallID: "c1", Tool: "bash", Args: json.RawMessage(`{"command":5}`)},
		Blocks:      polyloop.Action{Code: "sleep 3600 & echo $! > " + blocksPID + "; wait", Lang: "bash"},
		NoLeftovers: func(tb testing.TB) error {
			mu.Lock()
			dir, ok := dirs[tb]
			mu.Unlock()
			if !ok {
				return fmt.Errorf("no executor was made for %s, so there is no pid file to check", tb.Name())
			}
			return sleepGone(tb, filepath.Join(dir, blocksPID))
		},
	})
}

// blocksPID is the file, in the executor's directory, where the Blocks
// action writes the pid of its sleep.
const blocksPID = "blocks.pid"

// sleepGone returns an error if the process whose pid is in pidFile is
// still running.
func sleepGone(tb testing.TB, pidFile string) error {
	b, err := os.ReadFile(pidFile)
	if err != nil {
		tb.Logf("no pid file: the action was cancelled before sleep started (%v)", err)
		return nil
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		tb.Logf("pid file %q unreadable: cancelled while it was being written", b)
		return nil
	}
	if !gone(pid) {
		return fmt.Errorf("sleep (pid %d) is still running", pid)
	}
	tb.Logf("sleep (pid %d) is gone", pid)
	return nil
}
