//go:build linux

package bwrapenv_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
)

// loopDriver is the crash campaign's driving process: it runs (or resumes)
// the run named by spec ("DIR|RUN") to its end, and exits 0 when it
// finished completed. The campaign kills it with SIGKILL at random moments.
func loopDriver(spec string) int {
	dir, runID, _ := strings.Cut(spec, "|")
	l, err := openLoop(dir, os.Getenv("POLYLOOP_TEST_BWRAP_IMAGES"), loopTurns(loopSteps, appendLine))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	res, err := l.runOrResume(context.Background(), runID)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	if res.StopReason != polyloop.StopCompleted {
		fmt.Fprintf(os.Stderr, "stop reason %s\n", res.StopReason)
		return 4
	}
	return 0
}

// crashPoints is how many SIGKILLs the campaign lands:
// POLYLOOP_TEST_CRASH_POINTS, else 200 (20 with -short).
func crashPoints(t *testing.T) int {
	if s := os.Getenv("POLYLOOP_TEST_CRASH_POINTS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if testing.Short() {
		return 20
	}
	return 200
}

// TestCrashCampaign kills the driving process (SIGKILL: none of its code
// runs, its sandbox dies with it) at random moments of runs whose every
// action appends a unique line to a file inside the environment, resumes
// each run until it finishes, and checks: each line is in the final
// environment exactly once, in order; no action ended resume_state_unknown
// (every run finished completed); every log reads back (checksums) and
// plans; the environments the killed drivers left are found and pruned.
func TestCrashCampaign(t *testing.T) {
	images := testImages(t)
	points := crashPoints(t)
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("POLYLOOP_TEST_CRASH_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (POLYLOOP_TEST_CRASH_SEED), %d kill points", seed, points)
	rng := rand.New(rand.NewPCG(seed, 32))
	dir := t.TempDir()
	start := time.Now()
	kills, runs, replays := 0, 0, 0
	for kills < points {
		runs++
		runID := fmt.Sprintf("crash-%d", runs)
		for attempt := 0; ; attempt++ {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "BWRAPENV_TEST_LOOP="+dir+"|"+runID, "POLYLOOP_TEST_BWRAP_IMAGES="+images)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			var err error
			finished := false
			if attempt < 6 && kills < points {
				select {
				case err = <-exited:
					finished = true
				case <-time.After(time.Duration(rng.IntN(350)) * time.Millisecond):
					_ = cmd.Process.Signal(syscall.SIGKILL)
					err = <-exited
					if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
						kills++
					} else {
						finished = true
					}
				}
			} else {
				err = <-exited
				finished = true
			}
			if finished {
				if err != nil {
					t.Fatalf("%s: the driver failed: %v: %s", runID, err, stderr.String())
				}
				break
			}
		}
		l := newLoop(t, dir, nil)
		log := readLog(t, l, runID)
		plan, err := polyloop.PlanResume(log)
		if err != nil {
			t.Fatalf("%s: %v", runID, err)
		}
		fin := log.Records[len(log.Records)-1].Body.(*polyloop.RunFinished)
		if plan.Action != polyloop.PlanAlreadyFinished || fin.StopReason != polyloop.StopCompleted {
			t.Fatalf("%s: plan %s, stop reason %s", runID, plan.Action, fin.StopReason)
		}
		for _, r := range log.Records {
			if b, ok := r.Body.(*polyloop.ActionIntent); ok && b.Attempt > 1 {
				replays++
			}
		}
		checkLines(t, l.readFile(t, runID, lastSnapshot(t, log), "/work/lines"), loopSteps)
	}
	l := newLoop(t, dir, nil)
	orphans, err := l.provider.Prune(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range orphans {
		if !o.Removed {
			t.Errorf("orphan %s of %s not removed", o.ID, o.RunID)
		}
	}
	t.Logf("%d kills over %d runs (%d actions restored and replayed), %d orphans pruned, %s",
		kills, runs, replays, len(orphans), time.Since(start).Round(time.Millisecond))
}
