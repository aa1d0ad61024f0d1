package shellexec_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/polylooptest"
	"github.com/polyloop/polyloop/shellexec"
)

func TestConformance(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "blocks.pid")
	newExecutor := func(tb testing.TB, dir string) polyloop.ActionExecutor {
		e, err := shellexec.New(shellexec.Options{Dir: dir})
		if err != nil {
			tb.Fatal(err)
		}
		return e
	}
	polylooptest.TestActionExecutor(t, polylooptest.ExecutorHarness{
		New: func(tb testing.TB) polyloop.ActionExecutor { return newExecutor(tb, tb.TempDir()) },
		NewBrokenEnv: func(tb testing.TB) polyloop.ActionExecutor {
			return newExecutor(tb, filepath.Join(tb.TempDir(), "removed"))
		},
		Succeeds:    polyloop.Action{Code: "echo ok", Lang: "bash"},
		Fails:       polyloop.Action{Code: "ls /polylooptest/missing", Lang: "bash"},
		InvalidArgs: polyloop.Action{CallID: "c1", Tool: "bash", Args: json.RawMessage(`{"command":5}`)},
		Blocks:      polyloop.Action{Code: "sleep 3600 & echo $! > " + pidFile + "; wait", Lang: "bash"},
		NoLeftovers: func(testing.TB) error {
			b, err := os.ReadFile(pidFile)
			if err != nil {
				return nil // cancelled before sleep started
			}
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				return nil // cancelled while the pid was being written
			}
			if !gone(pid) {
				return fmt.Errorf("sleep (pid %d) is still running", pid)
			}
			return nil
		},
	})
}
