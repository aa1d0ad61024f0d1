package agentfile

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestTimeLimitsFromTheFile: limits.time_limit and working_limit are Go
// durations that land in the agent's limits, hence in the run's snapshot.
func TestTimeLimitsFromTheFile(t *testing.T) {
	t.Parallel()
	cfg, err := Load(context.Background(), writeFile(t, "agent.yaml", scriptHead+"limits: {max_steps: 3, time_limit: 1h30m, working_limit: 20m}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if l := cfg.Agent.Limits; l.TimeLimit != 90*time.Minute || l.WorkingLimit != 20*time.Minute {
		t.Fatalf("limits %+v, want time 1h30m and working 20m", l)
	}
}

func TestTimeLimitsRefusedWhenNotDurations(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ src, want string }{
		{"limits: {time_limit: 30}\n", `limits.time_limit: expected a duration such as 30m`},
		{"limits: {working_limit: -5m}\n", `limits.working_limit: expected a positive duration, found "-5m"`},
		{"limits: {time_limit: soon}\n", `limits.time_limit: expected a duration such as 30m`},
	} {
		got := problems(t, scriptHead+tc.src)
		if len(got) != 1 || !strings.Contains(got[0], tc.want) {
			t.Errorf("%s: problems %q, want one with %q", strings.TrimSpace(tc.src), got, tc.want)
		}
	}
}
