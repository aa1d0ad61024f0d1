package polylooptest

import (
	"errors"
	"fmt"
)

// rule is one rule of a seam's contract, in the contract's words. Every
// failure a check reports carries the rule it found broken (a *violation),
// and the failure message names it, so that an adapter's author reads which
// promise the implementation did not keep, not merely which check failed.
type rule string

// Rules every seam shares.
const (
	ruleNoPanic         rule = "a seam MUST NOT panic"
	ruleReturns         rule = "every call MUST return (the check's watchdog fired)"
	ruleCancelPromptly  rule = "a call whose context is done MUST return promptly"
	ruleCancelError     rule = "the error of a call whose context is done MUST errors.Is the context's error"
	ruleNoGoroutineLeak rule = "a call MUST NOT leave goroutines behind"
	ruleConcurrentUse   rule = "an implementation shared by runners MUST be safe for concurrent use"
)

// The rules of ModelClient.
const (
	ruleModelAnswers        rule = "Complete MUST return a reply when the model answers"
	ruleModelUsage          rule = "a reply MUST report token usage, and a known cost is finite and not negative"
	ruleModelID             rule = "a reply MUST name the provider's model"
	ruleModelAttempts       rule = "a reply MUST report 1 to Params.Retries+1 attempts"
	ruleRequestNotModified  rule = "Complete MUST NOT modify the request"
	ruleFailureIsError      rule = "a failed call MUST return a non-nil error, never an empty reply"
	ruleFailureNotCancelled rule = "a failure MUST NOT look like a cancellation (errors.Is a context error)"
	ruleRefusedKeepsUsage   rule = "a reply the client receives and refuses MUST fail with an error carrying its usage (polyloop.UsageCarrier)"
)

// The rules of DecisionParser.
const (
	ruleParserCorpus     rule = "Parse MUST give the decisions the harness's corpus wants"
	ruleOneDecision      rule = "Parse MUST return exactly one of the values polyloop.Act, Final or Invalid"
	ruleActHasActions    rule = "an Act MUST hold at least one action, each a tool call or code, not both"
	ruleArgsAreJSON      rule = "an Act's Args MUST be valid JSON"
	ruleInvalidFeedback  rule = "an Invalid MUST carry feedback that says what was wrong"
	ruleDeterministic    rule = "Parse MUST be deterministic"
	ruleReplyNotModified rule = "Parse MUST NOT modify the reply"
)

// The rules of ActionExecutor.
const (
	ruleRanIsExecuted        rule = "an action that ran, whatever its result, MUST be Executed with a nil error"
	ruleNotStartedIsRefused  rule = "an action that did not start (unknown tool, invalid arguments) MUST be NotExecuted with a nil error"
	ruleEnvFailureIsEnvError rule = "an environment failure MUST be returned as EnvError with a nil error"
	ruleFailureObserved      rule = "an action that fails MUST tell the model what went wrong (an observation)"
	ruleTruncatedCount       rule = "TruncatedChars MUST NOT be negative"
	ruleNoLeftovers          rule = "a cancelled action MUST release what it started (processes, sessions)"
	ruleActionNotModified    rule = "Execute MUST NOT modify the action"
)

// The rules of Store and RunLister.
const (
	ruleEmptyLog       rule = "ReadRows of a run without rows MUST return no rows and a nil error"
	ruleAcceptsNext    rule = "Append of a run's next rows MUST succeed"
	ruleReadsBack      rule = "ReadRows MUST return the rows as appended, in seq order: the same seq, kind, checksum and bytes (a RecordKeeper: the same records)"
	ruleNotRetained    rule = "Append MUST NOT retain rows nor their Data after it returns (the caller reuses them)"
	ruleSeqConflict    rule = "an Append whose first seq is not the run's next MUST fail with ErrSeqConflict and write nothing"
	ruleAtomic         rule = "an Append MUST be all or nothing"
	ruleRunsIsolated   rule = "runs whose ids differ MUST have separate logs"
	ruleOneWriterWins  rule = "of writers racing for one seq, exactly one MUST win and the others get ErrSeqConflict"
	ruleCancelAtomic   rule = "an Append with a done context MUST work or fail with the context's error, atomically, leaving the store usable"
	ruleDurable        rule = "the rows of an Append that returned nil MUST survive a restart"
	ruleListSummaries  rule = "ListRuns MUST return the summaries RunSummary.Apply folds from the records (the rows' Record) of the runs the filter matches"
	ruleListOrder      rule = "ListRuns MUST order runs without RunStarted first, then by start time, ties by run id byte order"
	ruleListLimitAfter rule = "ListRuns MUST apply Limit after ordering"
	ruleListDescending rule = "ListRuns with Descending MUST list in the exact reverse order: latest start first, ties by run id in reverse byte order, runs without RunStarted last"
	ruleListAfter      rule = "ListRuns with After MUST keep only the runs after that position in the order listed, so that pages cursored by their last position list every run once"
	ruleListTask       rule = "TaskContains MUST keep the runs whose summary task (its first MaxSummaryTask characters) contains the text, case-sensitively and literally"
)

// The rules of EventSink.
const (
	ruleSinkDelivers        rule = "Emit MUST deliver an event of every kind"
	ruleEventNotModified    rule = "Emit MUST NOT modify the event"
	ruleSinkFailureReturned rule = "a failed delivery MUST be returned as an error, not swallowed"
	ruleSinkFailureNotCtx   rule = "a delivery failure MUST NOT look like a context error"
)

// allRules are the rules the kit checks; each is caught broken by the
// kit's self-test.
var allRules = append([]rule{
	ruleNoPanic, ruleReturns, ruleCancelPromptly, ruleCancelError, ruleNoGoroutineLeak, ruleConcurrentUse,
	ruleModelAnswers, ruleModelUsage, ruleModelID, ruleModelAttempts, ruleRequestNotModified, ruleFailureIsError,
	ruleFailureNotCancelled, ruleRefusedKeepsUsage,
	ruleParserCorpus, ruleOneDecision, ruleActHasActions, ruleArgsAreJSON, ruleInvalidFeedback, ruleDeterministic,
	ruleReplyNotModified,
	ruleRanIsExecuted, ruleNotStartedIsRefused, ruleEnvFailureIsEnvError, ruleFailureObserved, ruleTruncatedCount,
	ruleNoLeftovers, ruleActionNotModified,
	ruleEmptyLog, ruleAcceptsNext, ruleReadsBack, ruleReadsRange, ruleNotRetained, ruleSeqConflict, ruleAtomic, ruleRunsIsolated,
	ruleOneWriterWins, ruleCancelAtomic, ruleDurable, ruleListSummaries, ruleListOrder, ruleListLimitAfter,
	ruleListDescending, ruleListAfter, ruleListTask,
	ruleSinkDelivers, ruleEventNotModified, ruleSinkFailureReturned, ruleSinkFailureNotCtx,
}, streamRules...)

// violation is a check's failure: the rule broken, and what was seen.
type violation struct {
	rule rule
	err  error
}

func (v *violation) Error() string { return fmt.Sprintf("breaks «%s»: %v", v.rule, v.err) }

func (v *violation) Unwrap() error { return v.err }

// broke returns a violation of r described by format and args (which may
// wrap an error with %w).
func broke(r rule, format string, args ...any) error {
	return &violation{rule: r, err: fmt.Errorf(format, args...)}
}

// tag marks err as a violation of r, unless it already is one (the rule
// named where the failure was found is the more precise); nil stays nil.
func tag(r rule, err error) error {
	var v *violation
	if err == nil || errors.As(err, &v) {
		return err
	}
	return &violation{rule: r, err: err}
}

// retag marks err as a violation of r even if it breaks another rule
// already: a failure that shows only under concurrency breaks the
// concurrency rule (and the message still names the other).
func retag(r rule, err error) error {
	if err == nil {
		return nil
	}
	return &violation{rule: r, err: err}
}

// within says where err happened, keeping the rule it breaks, if any.
func within(err error, format string, args ...any) error {
	where := fmt.Sprintf(format, args...)
	var v *violation
	if errors.As(err, &v) {
		return &violation{rule: v.rule, err: fmt.Errorf("%s: %w", where, v.err)}
	}
	return fmt.Errorf("%s: %w", where, err)
}

// rulesOf lists the rules that err, and the errors it joins or wraps,
// break.
func rulesOf(err error) []rule {
	switch e := err.(type) {
	case nil:
		return nil
	case *violation:
		return append([]rule{e.rule}, rulesOf(e.err)...)
	case interface{ Unwrap() []error }:
		var out []rule
		for _, sub := range e.Unwrap() {
			out = append(out, rulesOf(sub)...)
		}
		return out
	}
	return rulesOf(errors.Unwrap(err))
}
