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
	if name != "" && st.maint.ops[name] != nil {
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
	case *ChildReception:
		st.maint.open = true
	case *MaintenanceDone:
		st.maint.open, st.maint.done, st.maint.ops = false, b.Step, nil
		st.receptions = nil
	}
}

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
