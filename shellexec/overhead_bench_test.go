package shellexec_test

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/polyloop/polyloop/internal/procgroup"
	"github.com/polyloop/polyloop/shellexec"
)

// BenchmarkShellAction measures one shell action that does nothing beside
// the floor it is judged against (issue 36: at most 1.5 times a bare
// fork/exec of sh -c true), all in one invocation so that their ratio holds
// on a loaded machine:
//
//   - fork-exec/sh: exec.Command("sh", "-c", "true").Run(), the floor;
//   - fork-exec/bash: the same with bash, the default shell;
//   - fork-exec/sh-twice: two of them one after the other: what one more
//     process start costs;
//   - fork-exec/sh-group: the floor in a new process group with its output
//     through a pipe, as shellexec starts a command;
//   - execute/sh and execute/bash: Executor.Execute of code "true" with
//     Shell sh and bash (the process group, its tie to the process's
//     watchdog, the output capture and the outcome); execute/sh-done-sentinel
//     with a DoneSentinel, which the capture looks for in the output.
//
// Beside the time, each reports the CPU time of the processes it started
// (user and system, from getrusage of the reaped children) per operation;
// for execute, the CPU the process's shared watchdog (internal/procgroup,
// never reaped while the process lives) spent meanwhile is added, read
// from /proc/PID/schedstat.
//
//	go test -run '^$' -bench ShellAction -count 5 ./shellexec
func BenchmarkShellAction(b *testing.B) {
	for _, sh := range []string{"sh", "bash"} {
		b.Run("fork-exec/"+sh, func(b *testing.B) {
			defer childCPU(b)()
			for b.Loop() {
				forkExec(b, sh, nil)
			}
		})
	}
	b.Run("fork-exec/sh-twice", func(b *testing.B) {
		defer childCPU(b)()
		for b.Loop() {
			forkExec(b, "sh", nil)
			forkExec(b, "sh", nil)
		}
	})
	b.Run("fork-exec/sh-group", func(b *testing.B) {
		defer childCPU(b)()
		for b.Loop() {
			r, w, err := os.Pipe()
			if err != nil {
				b.Fatal(err)
			}
			forkExec(b, "sh", func(c *exec.Cmd) {
				c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
				c.Stdout, c.Stderr = w, w
			})
			w.Close()
			r.Close()
		}
	})
	for _, tc := range []struct {
		name string
		opts shellexec.Options
	}{
		{"sh", shellexec.Options{Shell: "sh"}}, {"bash", shellexec.Options{Shell: "bash"}},
		{"sh-done-sentinel", shellexec.Options{Shell: "sh", DoneSentinel: "SUBMIT"}},
	} {
		b.Run("execute/"+tc.name, func(b *testing.B) {
			opts := tc.opts
			opts.Dir = b.TempDir()
			e, err := shellexec.New(opts)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			if _, err := e.Execute(ctx, code("true")); err != nil { // the watchdog starts
				b.Fatal(err)
			}
			defer childAndWatchdogCPU(b)()
			for b.Loop() {
				if out, err := e.Execute(ctx, code("true")); err != nil || out.Observation != "" {
					b.Fatalf("%+v, %v", out, err)
				}
			}
		})
	}
}

func forkExec(b *testing.B, sh string, set func(*exec.Cmd)) {
	c := exec.Command(sh, "-c", "true")
	if set != nil {
		set(c)
	}
	if err := c.Run(); err != nil {
		b.Fatal(err)
	}
}

// childCPU reports, when the function it returns is called, the CPU time
// of the children reaped since, per operation, as child-cpu-µs/op.
func childCPU(b *testing.B) func() {
	before := childRusage(b)
	return func() {
		b.ReportMetric(float64(childRusage(b)-before)/1e3/float64(b.N), "child-cpu-µs/op")
	}
}

// childAndWatchdogCPU is childCPU with the CPU time the shared watchdog
// spent meanwhile added, and reported alone as watchdog-cpu-µs/op.
func childAndWatchdogCPU(b *testing.B) func() {
	pid := procgroup.WatchdogPID()
	if pid == 0 {
		b.Fatal("no watchdog")
	}
	children, watchdog := childRusage(b), schedCPU(b, pid)
	return func() {
		w := float64(schedCPU(b, pid)-watchdog) / 1e3 / float64(b.N)
		b.ReportMetric(float64(childRusage(b)-children)/1e3/float64(b.N)+w, "child-cpu-µs/op")
		b.ReportMetric(w, "watchdog-cpu-µs/op")
	}
}

// schedCPU is the CPU time process pid has run, in ns (the first field of
// /proc/PID/schedstat).
func schedCPU(b *testing.B, pid int) int64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/schedstat")
	if err != nil {
		b.Fatal(err)
	}
	ns, err := strconv.ParseInt(strings.Fields(string(data))[0], 10, 64)
	if err != nil {
		b.Fatal(err)
	}
	return ns
}

// childRusage is the user and system time of the reaped children, in ns.
func childRusage(b *testing.B) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		b.Fatal(err)
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
