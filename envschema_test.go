package polyloop_test

import (
	"strings"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
)

// TestEnvironmentInSchema: a snapshot with an environment validates
// against docs/log-format.schema.json; one whose image is a name, not a
// digest, does not.
func TestEnvironmentInSchema(t *testing.T) {
	rs := logSchema(t)
	spec := polyloop.EnvSpec{Image: "busybox", Limits: polyloop.EnvLimits{CPUs: 0.5, PIDs: 64}, HostEnv: []string{"LANG"},
		Files:  []polyloop.EnvFile{{Path: "/work/task.txt", Content: []byte("task")}},
		Mounts: []polyloop.EnvMount{{Source: "/data", Target: "/data"}}, WorkDir: "/work"}
	d := spec.Describe("bwrap", polyloop.DigestOf([]byte("image")))
	rec := func(d polyloop.EnvDescription) []byte {
		line, err := polyloop.Record{Seq: 0, At: time.Unix(0, 0).UTC(), Body: &polyloop.RunStarted{RunID: "r", SnapshotHash: "sha256:" + strings.Repeat("0", 64),
			LibraryVersion: "x", Snapshot: polyloop.Snapshot{Agent: "a", Environment: &d}}}.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		return line
	}
	if err := validateLine(rs, rec(d)); err != nil {
		t.Fatalf("%v\n%s", err, rec(d))
	}
	d.Image = "busybox"
	if err := validateLine(rs, rec(d)); err == nil {
		t.Error("an environment whose image is a name validated")
	}
}
