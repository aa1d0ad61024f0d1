package polyloop

// totalsAcc folds records into Totals; it is part of the log's one fold
// (logState), so a resumed run's totals are those of its whole log.
type totalsAcc struct {
	t Totals
	// modelIntents and actionIntents count intents; an intent without its
	// result (an orphan, or one open at the end) is an execution of unknown
	// outcome. settledWithoutIntent counts the actions a gate settled
	// without running them (denied, delivered).
	modelIntents, actionIntents, settledWithoutIntent int
	// reconciled counts reconciliations by resolution; a re-run's earlier
	// intent is known not to have happened, not of unknown outcome.
	reconciled ReconciledCounts
	// unbilledFailure: a call failed without usage (taken as not billed);
	// priced: a result's usage carried a cost. A failed call adds no cost
	// only where a price is known: with none in the log, its cost is
	// unknown, never $0.
	unbilledFailure, priced bool
}

func (a *totalsAcc) add(b RecordBody) {
	switch b := b.(type) {
	case *ModelCallIntent:
		a.modelIntents++
	case *ModelCallResult:
		a.t.ModelCalls++
		switch {
		case b.Reply != nil:
			a.addUsage(b.Reply.Usage)
		case b.Usage != nil:
			a.addUsage(*b.Usage)
		default:
			a.unbilledFailure = true
		}
	case *ActionIntent:
		a.actionIntents++
	case *ActionReconciled:
		switch b.Resolution {
		case ResolutionAdopted:
			a.reconciled.Adopted++
		case ResolutionRerun:
			a.reconciled.Rerun++
		default:
			a.reconciled.Unknown++
		}
	case *ActionResult:
		a.t.Actions++
	case *StepCompleted:
		a.t.Steps++
		if b.Outcome != nil {
			a.t.Actions++
		}
	}
}

func (a *totalsAcc) addUsage(u Usage) {
	if u.TokensUnknown || (u.InputTokens == 0 && u.OutputTokens == 0 && u.CachedTokens == 0) {
		a.t.TokensUnknown = true // a call billed for more than it reported, or that reported no usage at all
	}
	a.t.InputTokens += u.InputTokens
	a.t.OutputTokens += u.OutputTokens
	if u.CostUSD != nil {
		a.t.CostUSD += *u.CostUSD
		a.priced = true
	} else {
		a.t.CostUnknown = true
	}
}

// totals returns the totals so far.
func (a *totalsAcc) totals() Totals {
	t := a.t
	t.UnknownModelCalls = a.modelIntents - t.ModelCalls
	t.UnknownActions = a.actionIntents - (t.Actions - a.settledWithoutIntent) - a.reconciled.Rerun
	t.Reconciled = a.reconciled
	if t.UnknownModelCalls > 0 {
		t.TokensUnknown = true // the provider may have answered and billed
	}
	if t.TokensUnknown || (a.unbilledFailure && !a.priced) {
		t.CostUnknown = true
	}
	return t
}

// ComputeTotals computes a run's totals from its log: steps are StepCompleted
// records; tokens and cost are sums over model results with usage; intents
// without results count as executions of unknown outcome. A failed call
// without usage adds nothing, and leaves the cost unknown unless another
// result's usage carried a cost (a price is known). A log that breaks
// the grammar gives the totals of the records before the break.
func ComputeTotals(log RunLog) Totals {
	return foldPrefixWithoutHistory(log).totals.totals()
}
