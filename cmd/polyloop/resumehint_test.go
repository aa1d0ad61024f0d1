package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
)

// TestInterruptSaysWhatResumeWillDo interrupts a never_replay action: the
// command does not call the run simply resumable, it says, from the plan on
// the log read back at exit, that resume can only finish it
// resume_state_unknown — and resume then does exactly that.
func TestInterruptSaysWhatResumeWillDo(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath("polyloop")
	if err != nil {
		t.Fatalf("polyloop is not on PATH (TestMain installs it): %v", err)
	}
	dir := t.TempDir()
	c := &cli{t: t, dir: dir, bin: bin}
	src := strings.NewReplacer("TEMP", "0", "WORK", "work", "replay_safe", "never_replay").Replace(interruptAgent)
	if err := os.WriteFile(filepath.Join(dir, "agent.yaml"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stderr := c.interrupt("agent.yaml", "work", "n1")
	if code != exitInterrupted {
		t.Fatalf("exit code %d, want %d; stderr:\n%s", code, exitInterrupted, stderr)
	}
	want := "resume can only finish it resume_state_unknown: never_replay action a2 (bash) was in flight"
	if !strings.Contains(stderr, want) || strings.Contains(stderr, "resumable") {
		t.Fatalf("stderr does not say what resume will do (want %q):\n%s", want, stderr)
	}
	code, stdout, stderr := c.run("resume", "n1", "--agent", "agent.yaml")
	if code != exitStopped || !strings.Contains(stdout, "run n1: resume_state_unknown") {
		t.Fatalf("resume: exit %d, stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

func TestPlanHint(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		plan polyloop.ResumePlan
		want string
	}{
		{polyloop.ResumePlan{Action: polyloop.PlanStartStep, Step: 3}, "resume will start step 3"},
		{polyloop.ResumePlan{Action: polyloop.PlanRetryModelCall, Step: 2}, "resume will call the model again for step 2"},
		{polyloop.ResumePlan{Action: polyloop.PlanReparseReply, Step: 2}, "resume will parse step 2's stored reply again"},
		{polyloop.ResumePlan{Action: polyloop.PlanReplayAction, ActionID: "a3", Tool: "read"}, "resume will replay action a3 (read, replay_safe)"},
		{polyloop.ResumePlan{Action: polyloop.PlanStopUnknown, ActionID: "a3", Tool: "send"}, "resume can only finish it resume_state_unknown: never_replay action a3 (send) was in flight"},
		{polyloop.ResumePlan{Action: polyloop.PlanStopUnknown, ActionID: "a4"}, "never_replay action a4 (a code action)"},
		{polyloop.ResumePlan{Action: polyloop.PlanWriteFinish, StopReason: polyloop.StopEnvError}, "resume will write the finish its log already decides (env_error)"},
	} {
		if got := planHint(tt.plan); !strings.HasPrefix(got, tt.want) && !strings.Contains(got, tt.want) {
			t.Errorf("planHint(%s) = %q, want %q", tt.plan.Action, got, tt.want)
		}
	}
}
