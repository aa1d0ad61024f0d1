package trajectory

import (
	"time"

	"github.com/polyloop/polyloop"
)

// Invocation is a stretch of the log written by one invocation of Run or
// Resume (one process, as a rule), or by one answer to a gate
// (Runner.Approve or Runner.Deliver): records FirstSeq to LastSeq.
type Invocation struct {
	FirstSeq int64     `json:"first_seq"`
	LastSeq  int64     `json:"last_seq"`
	From     time.Time `json:"from"`
	To       time.Time `json:"to"`
	// FirstStep and LastStep are the steps its records belong to (0 for
	// records outside a step: run_started, config_override, run_finished
	// between steps).
	FirstStep int `json:"first_step"`
	LastStep  int `json:"last_step"`
	// Evidence says how the start of the invocation was recognized: "run
	// started" for the first; for a resume, the record that no
	// uninterrupted invocation writes first (see Invocations).
	Evidence string `json:"evidence"`
	// Gap is the time between the previous invocation's last record and
	// this one's first (0 for the first invocation).
	Gap time.Duration `json:"gap,omitempty"`
}

// Invocations says which invocation wrote which records, as the log's fold
// reads it (polyloop.Fact.Invocation).
//
// The library stamps every record of one Append with the same time, so the
// log splits into writes: maximal runs of consecutive records with equal
// timestamps. The machine's write boundaries (the root package's
// writeStarts, which the machine holds itself to and the step traces
// print) say how an invocation that has not stopped begins a write; a
// write that begins otherwise was begun by a new invocation — a resume, or
// a gate's answer (Runner.Approve, Runner.Deliver) — and its first record
// says how (Evidence). Time gaps alone are not taken as evidence (a model
// call or an action may take hours); they are reported in Gap.
//
// Some resumes leave no such evidence and go unseen, merged into the
// invocation before them:
//   - a resume inside a step's maintenance (PlanMaintain) whose first write
//     is the maintenance's next operation or reception, as the interrupted
//     invocation would have written it — unless it took a dead holder's
//     lease over (a lease_takeover: a killed process on a store with
//     leases) or changed the configuration. A resume after the process
//     stopped with an error inside the maintenance (a *PersistenceError
//     of the memory, say) is such a resume;
//   - records with identical timestamps that were written apart (a
//     hand-made log, a clock that does not move) merge into one write.
func Invocations(log polyloop.RunLog) []Invocation { return Build(log).Invocations }
