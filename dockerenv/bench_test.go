package dockerenv_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
)

// Docker's figures, measured as the sandbox backend's are (bwrapenv's
// bench_test.go): each iteration times the container's operation and a
// fork/exec of the same busybox on the host; "x-host" is the ratio.

func hostTrue(b *testing.B) time.Duration {
	start := time.Now()
	if err := exec.Command("/bin/busybox", "true").Run(); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

func BenchmarkCreate(b *testing.B) {
	im := testImage(b)
	p := openProvider(b, filepath.Join(b.TempDir(), "snapshots"))
	ctx := context.Background()
	var env, host time.Duration
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		e, err := p.Create(ctx, polyloop.EnvSpec{RunID: fmt.Sprint("bench-create-", i), Image: im})
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

func BenchmarkExec(b *testing.B) {
	im := testImage(b)
	p := openProvider(b, filepath.Join(b.TempDir(), "snapshots"))
	ctx := context.Background()
	e, err := p.Create(ctx, polyloop.EnvSpec{RunID: "bench-exec", Image: im})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Destroy(ctx)
	var env, host time.Duration
	for b.Loop() {
		start := time.Now()
		if r, err := e.Exec(ctx, polyloop.ExecRequest{Argv: []string{"/bin/busybox", "true"}}); err != nil || r.ExitCode != 0 {
			b.Fatal(r, err)
		}
		env += time.Since(start)
		host += hostTrue(b)
	}
	b.ReportMetric(float64(env)/float64(host), "x-host")
	b.ReportMetric(float64(env.Microseconds())/float64(b.N), "µs/exec")
}

// BenchmarkSnapshotStep: as the sandbox's, with 200 other changed files
// (the Engine is asked about each changed path at every snapshot).
func BenchmarkSnapshotStep(b *testing.B) {
	im := testImage(b)
	p := openProvider(b, filepath.Join(b.TempDir(), "snapshots"))
	ctx := context.Background()
	e, err := p.Create(ctx, polyloop.EnvSpec{RunID: "bench-snapshot", Image: im})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Destroy(ctx)
	setup := "mkdir -p /work/tree && cd /work/tree && for i in $(seq 200); do head -c 10240 /dev/urandom > f$i; done"
	if r, err := e.Exec(ctx, polyloop.ExecRequest{Argv: []string{"sh", "-c", setup}}); err != nil || r.ExitCode != 0 {
		b.Fatal(r, err)
	}
	if _, err := e.Snapshot(ctx); err != nil {
		b.Fatal(err)
	}
	var took time.Duration
	for b.Loop() {
		if r, err := e.Exec(ctx, polyloop.ExecRequest{Argv: []string{"sh", "-c", "head -c 1048576 /dev/urandom > /work/step.bin"}}); err != nil || r.ExitCode != 0 {
			b.Fatal(r, err)
		}
		start := time.Now()
		if _, err := e.Snapshot(ctx); err != nil {
			b.Fatal(err)
		}
		took += time.Since(start)
	}
	b.ReportMetric(float64(took.Microseconds())/1000/float64(b.N), "ms/snapshot")
}
