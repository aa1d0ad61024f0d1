package sweep

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
)

// Run ids are derived from what a run is: the sweep's name, the agent's
// snapshot hash, the task's id, the epoch and the attempt. Running the same
// sweep again therefore finds its runs under the same ids, and a changed
// agent (another snapshot hash) gets runs of its own.
//
// The form is five fields separated by dots:
//
//	<sweep>.<agent>.<task>.e<epoch>.a<attempt>
//
// where <agent> is the first 12 hexadecimal digits of the agent's snapshot
// hash and <task> the task's id when it is 1 to 64 letters, digits, '_' or
// '-', or else '~' and 16 hexadecimal digits of the SHA-256 of the id. The
// run id without its attempt is the coordinate (ledger.Entry.Coord).

// namePattern is what a sweep's name and a task id used as is may hold.
var namePattern = lazyRegexp(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)

var rawTaskID = lazyRegexp(`^[A-Za-z0-9_-]{1,64}$`)

// ValidName reports whether name may name a sweep: 1 to 64 letters, digits,
// '_' or '-', starting with a letter or digit.
func ValidName(name string) bool { return namePattern().MatchString(name) }

// agentKey is the part of a run id naming the agent.
func agentKey(agentHash string) string {
	h := strings.TrimPrefix(agentHash, "sha256:")
	if len(h) > 12 {
		h = h[:12]
	}
	return h
}

// taskKey is the part of a run id naming the task.
func taskKey(id string) string {
	if rawTaskID().MatchString(id) {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return "~" + hex.EncodeToString(sum[:8])
}

// CoordID is the coordinate of an agent, a task and an epoch in a sweep:
// the run id of its attempts without the attempt.
func CoordID(sweep, agentHash, taskID string, epoch int) string {
	return sweep + "." + agentKey(agentHash) + "." + taskKey(taskID) + ".e" + strconv.Itoa(epoch)
}

// RunID is the run id of an attempt at a coordinate.
func RunID(coord string, attempt int) string { return coord + ".a" + strconv.Itoa(attempt) }

// RunRef is what a sweep's run id says.
type RunRef struct {
	Sweep string
	// AgentKey is the start of the agent's snapshot hash; TaskKey the
	// task's id, or its hashed form.
	AgentKey, TaskKey string
	Epoch, Attempt    int
}

// Coord is the run's coordinate.
func (r RunRef) Coord() string {
	return r.Sweep + "." + r.AgentKey + "." + r.TaskKey + ".e" + strconv.Itoa(r.Epoch)
}

// ParseRunID reads a run id of the form RunID gives; it fails for any
// other.
func ParseRunID(id string) (RunRef, error) {
	parts := strings.Split(id, ".")
	if len(parts) != 5 {
		return RunRef{}, fmt.Errorf("sweep: %q is not a sweep's run id (sweep.agent.task.eN.aN)", id)
	}
	r := RunRef{Sweep: parts[0], AgentKey: parts[1], TaskKey: parts[2]}
	var err1, err2 error
	r.Epoch, err1 = counter(parts[3], "e")
	r.Attempt, err2 = counter(parts[4], "a")
	if !ValidName(r.Sweep) || r.AgentKey == "" || r.TaskKey == "" || err1 != nil || err2 != nil {
		return RunRef{}, fmt.Errorf("sweep: %q is not a sweep's run id (sweep.agent.task.eN.aN)", id)
	}
	return r, nil
}

func counter(s, prefix string) (int, error) {
	if !strings.HasPrefix(s, prefix) {
		return 0, fmt.Errorf("no %s", prefix)
	}
	n, err := strconv.Atoi(s[len(prefix):])
	if err != nil || n < 1 || strconv.Itoa(n) != s[len(prefix):] {
		return 0, fmt.Errorf("bad counter %q", s)
	}
	return n, nil
}
