package polyloop

import (
	"encoding/json"
	"fmt"

	"github.com/polyloop/polyloop/diag"
)

// The record kinds of a step's maintenance (log format 1.1). They lie
// between the step's record and the next step's first model-call intent (or
// the run's finish), with the children the maintenance received
// (child_reception with maintenance set), and end with maintenance_done.
const (
	KindMaintenanceOp   RecordKind = "maintenance_op"
	KindMaintenanceDone RecordKind = "maintenance_done"
)

// OpOutcome is how a maintenance operation ended.
type OpOutcome string

// The outcomes of a maintenance operation (see Perform).
const (
	// OpDone: the operation returned Value; its effect, if any, is
	// established.
	OpDone OpOutcome = "done"
	// OpReceived: the operation failed (Failure) and business received the
	// failure with Value.
	OpReceived OpOutcome = "received"
	// OpFailed: the operation failed (Failure), and no one received it.
	OpFailed OpOutcome = "failed"
	// OpUnpublished: the operation's effect is established (Value) and its
	// publication failed (Failure).
	OpUnpublished OpOutcome = "unpublished"
)

// MaintenanceOp records one operation of a step's maintenance and its
// outcome (Perform).
type MaintenanceOp struct {
	Step int `json:"step"`
	// Name is the operation's name, unique within the step's maintenance.
	Name string `json:"name"`
	// WriteID is the idempotency key the operation gave its store.
	WriteID string           `json:"write_id,omitempty"`
	Outcome OpOutcome        `json:"outcome"`
	Value   json.RawMessage  `json:"value,omitempty"`
	Failure *diag.Diagnostic `json:"failure,omitempty"`
	// Receivable, on a failed operation (log format 1.3 on): its error said
	// a policy may receive it (Receivable), so that a policy a
	// configuration change brings receives it from the log.
	Receivable bool `json:"receivable,omitempty"`
}

// MaintenanceDone records that a step's maintenance is done: its
// Maintainer returned nil.
type MaintenanceDone struct {
	Step int `json:"step"`
}

func (*MaintenanceOp) recordBody()   {}
func (*MaintenanceDone) recordBody() {}

// Kind implements RecordBody.
func (*MaintenanceOp) Kind() RecordKind { return KindMaintenanceOp }

// Kind implements RecordBody.
func (*MaintenanceDone) Kind() RecordKind { return KindMaintenanceDone }

// Validate implements RecordBody.
func (b *MaintenanceOp) Validate() error {
	if b.Step < 1 || b.Name == "" {
		return fmt.Errorf("maintenance_op: step %d, name %q", b.Step, b.Name)
	}
	switch b.Outcome {
	case OpDone:
		if b.Failure != nil {
			return fmt.Errorf("maintenance_op %q: done with a failure", b.Name)
		}
	case OpFailed:
		if b.Failure == nil || len(b.Value) > 0 {
			return fmt.Errorf("maintenance_op %q: failed needs a failure and no value", b.Name)
		}
	case OpReceived, OpUnpublished:
		if b.Failure == nil {
			return fmt.Errorf("maintenance_op %q: %s without its failure", b.Name, b.Outcome)
		}
	default:
		return fmt.Errorf("maintenance_op %q: unknown outcome %q", b.Name, b.Outcome)
	}
	if b.Receivable && b.Outcome != OpFailed {
		return fmt.Errorf("maintenance_op %q: %s and receivable (only a failure no one received is)", b.Name, b.Outcome)
	}
	if b.Outcome != OpFailed && len(b.Value) == 0 {
		return fmt.Errorf("maintenance_op %q: %s without a value", b.Name, b.Outcome)
	}
	return nil
}

// Validate implements RecordBody.
func (b *MaintenanceDone) Validate() error {
	if b.Step < 1 {
		return fmt.Errorf("maintenance_done: step %d", b.Step)
	}
	return nil
}
