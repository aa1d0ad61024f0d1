//go:build linux

package bwrapenv_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/bwrapenv"
	"github.com/polyloop/polyloop/internal/envloop"
	"github.com/polyloop/polyloop/snapshotstore"
)

// TestMain lets the test binary play a driving process (the child of
// TestDriverKilled) as well as the sandbox's init.
func TestMain(m *testing.M) {
	if dir := os.Getenv("BWRAPENV_TEST_DRIVER"); dir != "" {
		os.Exit(driver(dir))
	}
	envloop.Child(sandbox(os.Getenv("POLYLOOP_TEST_BWRAP_IMAGES")), pooledSandbox(os.Getenv("POLYLOOP_TEST_BWRAP_IMAGES")))
	os.Exit(m.Run())
}

// driver creates an environment under dir, starts a command that would
// write /work/late two seconds later, says "started" and waits to be
// killed.
func driver(dir string) int {
	store, err := snapshotstore.OpenDir(filepath.Join(dir, "snapshots"))
	if err != nil {
		return 2
	}
	p, err := bwrapenv.New(bwrapenv.Options{Images: os.Getenv("POLYLOOP_TEST_BWRAP_IMAGES"), StateDir: filepath.Join(dir, "envs"), Snapshots: store})
	if err != nil {
		return 2
	}
	ctx := context.Background()
	e, err := p.Create(ctx, polyloop.EnvSpec{RunID: "killed-driver", Image: "busybox", Limits: polyloop.EnvLimits{PIDs: 64},
		Mounts: []polyloop.EnvMount{{Source: dir, Target: "/host"}}})
	if err != nil {
		os.Stderr.WriteString(err.Error())
		return 2
	}
	go e.Exec(ctx, polyloop.ExecRequest{Argv: []string{"sh", "-c", "echo $$ > /tmp/pid; sleep 2; echo late > /work/late"}})
	time.Sleep(300 * time.Millisecond)
	os.Stdout.WriteString("started\n")
	select {}
}

// TestDriverKilled: when the driving process dies (SIGKILL: no code of
// it runs), the backend kills the commands in its environment — the
// command never writes its file, no process of the sandbox is left — and
// Prune finds the environment by its state file and removes it.
func TestDriverKilled(t *testing.T) {
	testImages(t)
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "BWRAPENV_TEST_DRIVER="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	if line != "started\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the driver did not start its environment: %q", line)
	}
	envs, _ := filepath.Glob(filepath.Join(dir, "envs", "*", "state.json"))
	if len(envs) != 1 {
		t.Fatalf("state files: %q", envs)
	}
	var st struct {
		BwrapPID int `json:"bwrap_pid"`
	}
	raw, _ := os.ReadFile(envs[0])
	json.Unmarshal(raw, &st)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(st.BwrapPID, 0) == nil && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if syscall.Kill(st.BwrapPID, 0) == nil {
		if b, _ := os.ReadFile("/proc/" + itoa(st.BwrapPID) + "/cmdline"); strings.Contains(string(b), "bwrap") {
			t.Fatalf("bwrap (pid %d) outlived its driver by 5s", st.BwrapPID)
		}
	}
	time.Sleep(2500 * time.Millisecond) // past the moment the command would have written
	upper := filepath.Join(filepath.Dir(envs[0]), "rw", "upper", "work", "late")
	if _, err := os.Stat(upper); err == nil {
		t.Fatal("the command of a killed driver ran on and wrote /work/late")
	}
	store, _ := snapshotstore.OpenDir(filepath.Join(dir, "snapshots"))
	p, err := bwrapenv.New(bwrapenv.Options{Images: testImages(t), StateDir: filepath.Join(dir, "envs"), Snapshots: store})
	if err != nil {
		t.Fatal(err)
	}
	found, err := p.Prune(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 || found[0].RunID != "killed-driver" || !found[0].Removed {
		t.Fatalf("Prune found %+v, want the killed driver's environment, removed", found)
	}
	if left, _ := os.ReadDir(filepath.Join(dir, "envs")); len(left) != 0 {
		t.Fatalf("after Prune, left: %v", left)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
