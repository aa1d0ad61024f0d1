package polyloop

// totalsAcc folds records into Totals. The loop and ComputeTotals use the
// same fold, so a resumed run's totals are those of its whole log.
type totalsAcc struct {
	t                 Totals
	openModel, openAc bool
}

func (a *totalsAcc) add(b RecordBody) {
	switch b := b.(type) {
	case *ModelCallIntent:
		if a.openModel {
			a.t.UnknownModelCalls++
		}
		a.openModel = true
	case *ModelCallResult:
		a.openModel = false
		a.t.ModelCalls++
		if b.Reply != nil {
			u := b.Reply.Usage
			a.t.InputTokens += u.InputTokens
			a.t.OutputTokens += u.OutputTokens
			if u.CostUSD != nil {
				a.t.CostUSD += *u.CostUSD
			} else {
				a.t.CostUnknown = true
			}
		}
	case *ActionIntent:
		if a.openAc {
			a.t.UnknownActions++
		}
		a.openAc = true
	case *StepCompleted:
		a.openAc = false
		a.t.Steps++
		if b.Outcome != nil {
			a.t.Actions++
		}
	}
}

// totals returns the totals so far, counting intents still open as
// executions of unknown outcome.
func (a *totalsAcc) totals() Totals {
	t := a.t
	if a.openModel {
		t.UnknownModelCalls++
	}
	if a.openAc {
		t.UnknownActions++
	}
	return t
}

// ComputeTotals computes a run's totals from its log: steps are StepCompleted
// records; tokens and cost are sums over model results with usage; intents
// without results count as executions of unknown outcome.
func ComputeTotals(log RunLog) Totals {
	var a totalsAcc
	for _, r := range log.Records {
		if r.Body != nil {
			a.add(r.Body)
		}
	}
	return a.totals()
}
