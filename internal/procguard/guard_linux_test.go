package procguard

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// helperEnv makes the test binary a guarded process: it calls Guard, then
// writes what it sees (its environment's secret, its arguments) to the file
// the variable names, with how many images it took, and sleeps.
const helperEnv = "PROCGUARD_TEST_HELPER"

const (
	secretVar = "SOME_API_KEY"
	secret    = "sk-guard-test-5e1c7e7"
	password  = "pw-guard-test-9a0b"
)

func TestMain(m *testing.M) {
	reexecuted := os.Getenv(fdEnv) != "" // the helper's variable is hidden until Guard
	if os.Getenv(helperEnv) == "" && !reexecuted {
		os.Exit(m.Run())
	}
	err := Guard(func(a string) string { return strings.ReplaceAll(a, password, "xxxxx") })
	out := os.Getenv(helperEnv)
	images := 1
	if reexecuted {
		images = 2
	}
	report := fmt.Sprintf("%v\n%s\n%s\n%d\n", err, os.Getenv(secretVar), strings.Join(os.Args[1:], " "), images)
	_ = os.WriteFile(out+".tmp", []byte(report), 0o600)
	_ = os.Rename(out+".tmp", out)
	time.Sleep(time.Minute)
	os.Exit(0)
}

// TestGuardHidesSecrets: a guarded process keeps its secret variable and
// its password-bearing argument for itself (os.Getenv, os.Args) while the
// kernel shows neither (/proc/PID/environ, cmdline), and none of its
// threads can give CAP_SYS_PTRACE to a child — done in place, in one
// image, and, where in place is not possible (forced here), by
// re-executing: two images.
func TestGuardHidesSecrets(t *testing.T) {
	t.Parallel()
	for name, images := range map[string]int{"in place": 1, "re-executed": 2} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			exe, err := os.Executable()
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "report")
			cmd := exec.Command(exe, "-test.run=^$", "--store=postgres://u:"+password+"@h/d")
			cmd.Env = append(os.Environ(), helperEnv+"="+out, secretVar+"="+secret, "LANG=C.UTF-8")
			if images == 2 {
				cmd.Env = append(cmd.Env, "POLYLOOP_GUARD_REEXEC=1")
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
			var report []byte
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				if report, err = os.ReadFile(out); err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("no report from the guarded process")
				}
			}
			if want := fmt.Sprintf("<nil>\n%s\n-test.run=^$ --store=postgres://u:%s@h/d\n%d\n", secret, password, images); string(report) != want {
				t.Fatalf("the guarded process saw %q, want %q (the last line: images started)", report, want)
			}
			proc := "/proc/" + strconv.Itoa(cmd.Process.Pid)
			environ, err := os.ReadFile(proc + "/environ")
			if err != nil {
				t.Fatal(err)
			}
			cmdline, err := os.ReadFile(proc + "/cmdline")
			if err != nil {
				t.Fatal(err)
			}
			for what, data := range map[string][]byte{"environ": environ, "cmdline": cmdline} {
				for _, s := range []string{secret, password} {
					if strings.Contains(string(data), s) {
						t.Errorf("%s shows %s: %q", what, s, data)
					}
				}
			}
			if !strings.Contains(string(environ), "LANG=C.UTF-8\x00") {
				t.Errorf("environ lost the shown variable LANG: %q", environ)
			}
			if !strings.Contains(string(cmdline), "--store=postgres://u:xxxxx@h/") {
				t.Errorf("cmdline %q: want the redacted DSN", cmdline)
			}
			tasks, _ := os.ReadDir(proc + "/task")
			for _, task := range tasks {
				if capBnd(t, proc+"/task/"+task.Name()+"/status")&(1<<unix.CAP_SYS_PTRACE) != 0 && os.Getuid() == 0 {
					t.Errorf("thread %s keeps CAP_SYS_PTRACE in its bounding set", task.Name())
				}
			}
		})
	}
}

func capBnd(t *testing.T, status string) uint64 {
	v, err := strconv.ParseUint(field(t, status, "CapBnd:"), 16, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func field(t *testing.T, path, name string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), name); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// TestPtraceInBounding: the check behind Guard's error when, run as root
// without CAP_SETPCAP (a container or service with a cut bounding set),
// CAP_SYS_PTRACE cannot leave the bounding set and a command run as root
// could read the process's memory. (End to end it cannot run from this
// test binary: linked with cgo, it dropped CAP_SYS_PTRACE at load, so no
// child of it has the capability to keep. Checked by hand as root:
// `setpriv --bounding-set -setpcap` on the helper reports the error.)
func TestPtraceInBounding(t *testing.T) {
	for status, want := range map[string]bool{
		"Name:\tx\nCapBnd:\t000001fffeffffff\nCapAmb:\t0\n": true,  // bit 19 set
		"Name:\tx\nCapBnd:\t000001fffef7ffff\nCapAmb:\t0\n": false, // bit 19 clear
		"Name:\tx\nCapBnd:\tzz\n":                           true,  // unreadable: assume the worst
		"Name:\tx\n":                                        true,
	} {
		if got := ptraceInBounding([]byte(status)); got != want {
			t.Errorf("ptraceInBounding(%q) = %v, want %v", status, got, want)
		}
	}
}
