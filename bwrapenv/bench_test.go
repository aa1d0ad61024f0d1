//go:build linux

package bwrapenv_test

import (
	"context"
	"fmt"
	"io/fs"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/bwrapenv"
)

// The sandbox's figures as ratios to the host, measured in one run: each
// iteration times the sandbox's operation and, right after, a plain
// fork/exec of the same command on the host (the image's busybox is the
// host's /bin/busybox), so that load on the machine weighs on both alike.
// The "x-host" metric is the ratio of the sums.

const hostBusybox = "/bin/busybox"

func hostTrue(b *testing.B) time.Duration {
	start := time.Now()
	if err := exec.Command(hostBusybox, "true").Run(); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

// BenchmarkCreate: Create (the sandbox is up and its init serves) against
// one fork/exec of busybox true on the host.
func BenchmarkCreate(b *testing.B) {
	p, _ := newProvider(b)
	ctx := context.Background()
	var env, host time.Duration
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		e, err := p.Create(ctx, polyloop.EnvSpec{RunID: fmt.Sprint("bench-create-", i), Image: "busybox"})
		if err != nil {
			b.Fatal(err)
		}
		env += time.Since(start)
		host += hostTrue(b)
		e.Destroy(ctx)
	}
	b.ReportMetric(float64(env)/float64(host), "x-host")
	b.ReportMetric(float64(env.Microseconds())/float64(b.N), "µs/create")
}

// BenchmarkCreatePooled: Create from a warm pool (Options.Pool): the
// sandbox was started ahead, Create takes it and labels it with the run;
// against one fork/exec on the host. Each iteration waits (untimed) until
// the pool holds a sandbox again, so every timed Create takes one: this is
// the create of a run when the pool keeps up, not the cold create
// (BenchmarkCreate), whose cost moved off the run's path, not away.
func BenchmarkCreatePooled(b *testing.B) {
	p := openProviderWith(b, filepath.Join(b.TempDir(), "snaps"), bwrapenv.Options{Pool: 1, DestroyInBackground: true})
	ctx := context.Background()
	spec := polyloop.EnvSpec{RunID: "bench-warm", Image: "busybox"}
	e, err := p.Create(ctx, spec) // cold: the pool fills after the first Create of a kind
	if err != nil {
		b.Fatal(err)
	}
	e.Destroy(ctx)
	var env, host time.Duration
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		for waited := time.Duration(0); p.Stats().Idle == 0; waited += time.Millisecond {
			if st := p.Stats(); st.LastFillError != nil || waited > 30*time.Second {
				b.Fatalf("the pool does not fill: %+v", st)
			}
			time.Sleep(time.Millisecond)
		}
		b.StartTimer()
		start := time.Now()
		spec.RunID = fmt.Sprint("bench-pooled-", i)
		e, err := p.Create(ctx, spec)
		if err != nil {
			b.Fatal(err)
		}
		env += time.Since(start)
		host += hostTrue(b)
		e.Destroy(ctx)
	}
	b.ReportMetric(float64(env)/float64(host), "x-host")
	b.ReportMetric(float64(env.Microseconds())/float64(b.N), "µs/create")
}

// BenchmarkExec: one Exec of busybox true, round trip, against one
// fork/exec of it on the host.
func BenchmarkExec(b *testing.B) {
	p, _ := newProvider(b)
	ctx := context.Background()
	e, err := p.Create(ctx, polyloop.EnvSpec{RunID: "bench-exec", Image: "busybox"})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Destroy(ctx)
	var env, host time.Duration
	for b.Loop() {
		start := time.Now()
		r, err := e.Exec(ctx, polyloop.ExecRequest{Argv: []string{"/bin/busybox", "true"}})
		if err != nil || r.ExitCode != 0 {
			b.Fatal(r, err)
		}
		env += time.Since(start)
		host += hostTrue(b)
	}
	b.ReportMetric(float64(env)/float64(host), "x-host")
	b.ReportMetric(float64(env.Microseconds())/float64(b.N), "µs/exec")
}

// BenchmarkSnapshotStep: the snapshot after a step that changed 1 MB (one
// file rewritten) in an environment that has changed 0, 200 or 2,000
// other files of 10 KB since its image. Reported: ms per snapshot and the
// bytes the snapshot store (a directory) grew by per step.
func BenchmarkSnapshotStep(b *testing.B) {
	for _, files := range []int{0, 200, 2000} {
		b.Run(fmt.Sprint("changed_files=", files), func(b *testing.B) { benchSnapshotStep(b, files) })
	}
}

func benchSnapshotStep(b *testing.B, files int) {
	p, snaps := newProvider(b)
	ctx := context.Background()
	e, err := p.Create(ctx, polyloop.EnvSpec{RunID: "bench-snapshot", Image: "busybox"})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Destroy(ctx)
	setup := fmt.Sprintf("mkdir -p /work/tree && cd /work/tree && for i in $(seq %d); do head -c 10240 /dev/urandom > f$i; done", files)
	if r, err := e.Exec(ctx, polyloop.ExecRequest{Argv: []string{"sh", "-c", setup}}); err != nil || r.ExitCode != 0 {
		b.Fatal(r, err)
	}
	if _, err := e.Snapshot(ctx); err != nil {
		b.Fatal(err)
	}
	before := dirSize(b, snaps)
	var took time.Duration
	for b.Loop() {
		step := polyloop.ExecRequest{Argv: []string{"sh", "-c", "head -c 1048576 /dev/urandom > /work/step.bin"}}
		if r, err := e.Exec(ctx, step); err != nil || r.ExitCode != 0 {
			b.Fatal(r, err)
		}
		start := time.Now()
		if _, err := e.Snapshot(ctx); err != nil {
			b.Fatal(err)
		}
		took += time.Since(start)
	}
	b.ReportMetric(float64(took.Microseconds())/1000/float64(b.N), "ms/snapshot")
	b.ReportMetric(float64(dirSize(b, snaps)-before)/float64(b.N), "stored-bytes/step")
}

func dirSize(b *testing.B, dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// BenchmarkSnapshotFresh: the snapshot of an environment just created
// from its image, with nothing copied in or run (the one a run takes
// before its first action), then the one after a command that wrote a
// file: ms per snapshot of each, and the Destroy after them.
func BenchmarkSnapshotFresh(b *testing.B) {
	p, _ := newProvider(b)
	ctx := context.Background()
	var fresh, after, destroy time.Duration
	for i := 0; b.Loop(); i++ {
		e, err := p.Create(ctx, polyloop.EnvSpec{RunID: fmt.Sprint("bench-fresh-", i), Image: "busybox", WorkDir: "/work"})
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if _, err := e.Snapshot(ctx); err != nil {
			b.Fatal(err)
		}
		fresh += time.Since(start)
		if r, err := e.Exec(ctx, polyloop.ExecRequest{Argv: []string{"sh", "-c", "echo one >> f"}}); err != nil || r.ExitCode != 0 {
			b.Fatal(r, err)
		}
		start = time.Now()
		if _, err := e.Snapshot(ctx); err != nil {
			b.Fatal(err)
		}
		after += time.Since(start)
		start = time.Now()
		e.Destroy(ctx)
		destroy += time.Since(start)
	}
	b.ReportMetric(float64(fresh.Microseconds())/1000/float64(b.N), "ms/fresh")
	b.ReportMetric(float64(after.Microseconds())/1000/float64(b.N), "ms/after")
	b.ReportMetric(float64(destroy.Microseconds())/1000/float64(b.N), "ms/destroy")
}
