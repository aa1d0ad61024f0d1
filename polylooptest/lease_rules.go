package polylooptest

// The rules of the Leaser contract (polyloop.Leaser), one per check: a
// check's failure carries its rule unless it found a more precise one.
const (
	ruleLeaseFree       rule = "a free run's lease MUST be granted, with no take-over"
	ruleLeaseExclusive  rule = "a live holder's lease MUST be refused with ErrLeaseHeld naming the holder"
	ruleLeaseIsolated   rule = "the leases of distinct run ids MUST NOT exclude each other"
	ruleLeaseDeadHolder rule = "a dead holder's lease MUST be taken over, naming the dead holder"
	ruleLeaseForced     rule = "a forced take-over MUST succeed, name the holder and close its Lost channel"
	ruleLeaseAfterForce rule = "once a forced take-over's lease is released, the run MUST be free on every instance, the forced-away holder's included"
	ruleLeaseForceFree  rule = "a forced take-over of a free lease MUST succeed with no take-over"
	ruleLeaseConcurrent rule = "at most one of concurrent acquisitions MUST be granted"
	ruleLeaseCancelled  rule = "AcquireLease with a done context MUST fail, wrap ctx.Err() and hold nothing"
	ruleLeaseToken      rule = "a lease request without an owner token MUST be refused"
	ruleLeaseLiveHolder rule = "LiveHolder MUST report a live holder, and MUST NOT take the lease"
)

var leaseRules = []rule{ruleLeaseFree, ruleLeaseExclusive, ruleLeaseIsolated, ruleLeaseDeadHolder, ruleLeaseForced,
	ruleLeaseAfterForce, ruleLeaseForceFree, ruleLeaseConcurrent, ruleLeaseCancelled, ruleLeaseToken, ruleLeaseLiveHolder}

// ruled makes every failure of a check carry r, unless it names a more
// precise rule.
func ruled[H any](r rule, run func(e *env, h H) error) func(e *env, h H) error {
	return func(e *env, h H) error { return tag(r, run(e, h)) }
}
