package polyloop

// maintState is the part of the log's fold that concerns the maintenance of
// the last completed step.
type maintState struct {
	// open: a record of the last step's maintenance has been read, and not
	// yet its maintenance_done.
	open bool
	// done is the last step whose maintenance_done has been read.
	done int
	// ops are the recorded operations of the open maintenance, by name.
	ops map[string]*MaintenanceOp
	// again names the failures of the open maintenance that no policy
	// received and that a configuration change since then hands to the
	// policy now in force, once (design 0020): operations by name, child
	// receptions by "child:" and the child's run id. A record of the same
	// operation or child clears its mark.
	again map[string]bool
	// added counts the messages the last completed step added to the end
	// of the history; step is its record; view the view its model call
	// showed.
	added int
	step  *StepCompleted
	view  *ViewRef
}

// maintenancePending reports whether the last completed step waits for its
// maintenance: the snapshot in force has a maintainer, and the step's
// maintenance_done is not in the log.
func (st *logState) maintenancePending() bool {
	mem := st.snap.Memory
	return mem != nil && mem.Maintainer != nil && st.step > 0 && st.maint.done < st.step &&
		(st.phase == phaseIdle || st.phase == phaseDecided)
}

// checkMaintenanceOrder refuses what may not come while a step's
// maintenance is open: the next step's model call, the run's finish.
func (st *logState) checkMaintenanceOrder(r Record) error {
	if !st.maint.open {
		return nil
	}
	switch r.Body.(type) {
	case *ModelCallIntent, *RunFinished:
		return st.corrupt(r, "%s while step %d's maintenance is open (no maintenance_done)", r.Kind(), st.step)
	}
	return nil
}

// checkMaintenance checks a record of step step's maintenance: it follows
// the step's record, before the next step, and the step's maintenance is not
// done. name is an operation's name ("" for other records).
func (st *logState) checkMaintenance(r Record, step int, name string) error {
	if (st.phase != phaseIdle && st.phase != phaseDecided) || step != st.step || st.step < 1 {
		return st.corrupt(r, "%s of step %d outside that step's maintenance (the log stands in step %d)", r.Kind(), step, st.step)
	}
	if st.maint.done >= step {
		return st.corrupt(r, "%s of step %d after its maintenance_done", r.Kind(), step)
	}
	if name != "" && st.maint.ops[name] != nil && !st.maint.again[name] {
		return st.corrupt(r, "maintenance_op %q recorded twice for step %d", name, step)
	}
	return nil
}

// foldMaintenance folds a record of a step's maintenance.
func (st *logState) foldMaintenance(body RecordBody) {
	switch b := body.(type) {
	case *MaintenanceOp:
		st.maint.open = true
		if st.maint.ops == nil {
			st.maint.ops = map[string]*MaintenanceOp{}
		}
		st.maint.ops[b.Name] = b
		delete(st.maint.again, b.Name)
	case *ChildReception:
		st.maint.open = true
		delete(st.maint.again, "child:"+b.ChildRunID)
	case *MaintenanceDone:
		st.maint.open, st.maint.done, st.maint.ops, st.maint.again = false, b.Step, nil, nil
		st.receptions = nil
	}
}

// overrideMaintenance marks, at a configuration change, the failures of the
// open maintenance that no policy received: the policy now in force
// receives each once (Perform, InvokeChild), instead of the recorded
// failure coming back.
func (st *logState) overrideMaintenance() {
	if !st.maint.open {
		return
	}
	mark := func(k string) {
		if st.maint.again == nil {
			st.maint.again = map[string]bool{}
		}
		st.maint.again[k] = true
	}
	for name, op := range st.maint.ops {
		if op.Outcome == OpFailed {
			mark(name)
		}
	}
	for id, rec := range st.receptions {
		if rec.Maintenance && rec.unreceived() {
			mark("child:" + id)
		}
	}
}

// unreceived reports whether a reception left the child's outcome
// unreceived: its handler failed, or a failed child was delivered as is,
// with no handler for it.
func (c *ChildReception) unreceived() bool {
	return c.Reception == ReceptionFailed || (c.Reception == ReceptionAccepted && c.StopReason != StopCompleted)
}

// receivesAgain reports whether the recorded failure k of the open
// maintenance goes to the policy in force (overrideMaintenance).
func (st *logState) receivesAgain(k string) bool { return st.maint.again[k] }

// beginMaintenance starts the bookkeeping of a completed step's maintenance;
// from is where its messages start in the history.
func (st *logState) beginMaintenance(b *StepCompleted, from int) {
	st.maint = maintState{done: st.maint.done, added: len(st.hist.msgs) - from, step: b, view: st.maint.view}
}

// maintainedStep is what the Maintainer of the last completed step is given.
func (st *logState) maintainedStep() MaintainedStep {
	s := MaintainedStep{RunID: st.runID, Step: st.step, Messages: append([]Message(nil), st.hist.msgs[len(st.hist.msgs)-st.maint.added:]...)}
	if b := st.maint.step; b != nil {
		s.Decision, s.Answer = b.Decision, b.Answer
	}
	if v := st.maint.view; v != nil {
		ref := *v
		s.View = &ref
	}
	return s
}
