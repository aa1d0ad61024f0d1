package polyloop

import (
	"context"
	"errors"
)

// ModelClient is the seam through which the library calls a language model.
//
// Contract:
//   - Complete returns a reply only when the model really answered. Every
//     failure — network, HTTP error status, provider error, a response that
//     cannot be parsed, retries exhausted — MUST be a non-nil error. An empty
//     reply MUST NOT be used to mean failure: an empty string is a legitimate
//     answer and the two are different categories in analysis.
//   - The library catches the error: it records a ModelCallResult carrying a
//     bounded diagnostic of it (package diag) and finishes the run with
//     StopLLMError. Errors that expose structured fields (HTTP status,
//     provider code, request id) should implement diag.Fielder. Known cost,
//     accepted: a bug inside the adapter is also recorded as llm_error.
//   - Cancellation: when ctx is done, Complete releases what it holds in
//     flight and returns promptly with an error for which
//     errors.Is(err, ctx.Err()) holds. The library then returns that error
//     from Run/Resume untouched and writes no result record.
//   - Retries, if any, are the adapter's own explicit configuration (their
//     count belongs in ModelParams.Retries, which is in the snapshot) and the
//     number of attempts is reported in ModelReply.Attempts. The library never
//     retries a model call.
//   - The reply carries usage (tokens, and cost when known: a nil CostUSD
//     means unknown, never zero), the provider's model id, and the tool calls,
//     whose Args MUST be valid JSON (see ToolCall.Args).
//   - A billed call is never free. A reply the client receives and refuses
//     (one it cannot accept: no choices, arguments beyond the log's limits)
//     MUST fail with an error that carries the reply's usage (UsageCarrier
//     in its chain; polylooptest's RefusedKeepsUsage check). A failed call
//     that may have been billed for more than it reported — an attempt
//     whose request was sent and then timed out, lost its connection or was
//     cut short — carries a Usage with TokensUnknown (and no cost), as does
//     a reply after such an attempt was retried. The library keeps that
//     usage on the failed call's result and counts it in the totals; a
//     failure that carries none (a refused connection, an error status) is
//     taken as not billed.
//   - Ownership: the request (its Messages and Tools slices) belongs to the
//     library; Complete MUST NOT modify or retain it after returning. The
//     reply becomes the library's: the adapter MUST NOT modify it afterwards.
//   - Concurrency: the library calls Complete from one goroutine per run; a
//     client shared by several runners MUST be safe for concurrent use.
//   - Secrets (API keys) MUST NOT appear in the reply, in error texts, or in
//     what Describe returns.
type ModelClient interface {
	Complete(ctx context.Context, req ModelRequest) (ModelReply, error)
}

// ErrInvalidReply describes (in the failure diagnostic of the model
// result) a reply that breaks the ModelClient contract, such as tool-call
// arguments that are not JSON. The run finishes with StopLLMError.
var ErrInvalidReply = errors.New("polyloop: model client returned an invalid reply")

// DecisionParser turns a model reply into exactly one Decision.
//
// Contract:
//   - Parse MUST return a Decision (Act, Final or Invalid) for every input,
//     including empty, huge and malformed replies. There is no error: a reply
//     that cannot be understood is Invalid, with Feedback that names what was
//     wrong (no action found, too many actions, malformed JSON, unknown
//     fields, ...). The feedback is sent back to the model.
//   - An Act is a batch: one or more actions, in the order the reply asked
//     for them (one per tool call). Each becomes its own execution.
//   - Parse MUST be deterministic: the same reply gives the same decision,
//     always. Resume depends on it: after a crash the library parses the
//     stored reply again, since no side effect has happened between parse and
//     action intent.
//   - Parse MUST NOT panic. A parser that panics is a bug: the library does
//     not recover the panic, which propagates out of Run/Resume. Inventing a
//     stop reason for it would disguise a parser bug as an outcome of the run.
//   - An Act's Args MUST be valid JSON (an object, for tool calls); a reply
//     whose arguments are broken is Invalid, with feedback saying so. An Act
//     without actions, or with arguments that are not JSON, is a parser bug:
//     Run/Resume return ErrInvalidDecision.
//   - Parse MUST NOT modify the reply. It may be called concurrently for
//     different runs.
type DecisionParser interface {
	Parse(reply ModelReply) Decision
}

// Errors of the DecisionParser contract, returned (and propagated out of
// Run/Resume) when a parser breaks it. Nothing is written for the decision.
var (
	// ErrInvalidDecision: an Act without actions, or whose Args are not
	// valid JSON.
	ErrInvalidDecision = errors.New("polyloop: parser returned an invalid decision")
	// ErrNondeterministicParser: on resume, the parser turned a stored reply
	// into other actions than the ones recorded.
	ErrNondeterministicParser = errors.New("polyloop: parser gave a different decision for a stored reply")
)

// ActionExecutor runs one action in the environment.
//
// Contract — the three statuses, all decided by the executor:
//   - Executed: the action really ran in the environment, whatever its
//     result. An action that fails (a command exiting non-zero, code raising,
//     an SQL syntax error) is Executed: its observation goes back to the model
//     so that it can correct itself. The line is "can the environment keep
//     serving?" — yes means Executed.
//   - NotExecuted: the action did not start: unknown tool, invalid arguments,
//     refused by the executor. The run continues. Like database/sql's
//     driver.ErrBadConn, NotExecuted MUST NOT be returned if the action may
//     have started: an executor that cannot tell returns Executed (with what
//     it knows as the observation) or an error (the outcome is then unknown,
//     and resume decides by the replay policy). A resume or a retry takes
//     NotExecuted at its word.
//   - EnvError: the environment itself is broken (cannot connect, protocol
//     violation, the completion query itself failed). It always ends the run
//     with StopEnvError. Environment failures MUST be expressed by returning
//     EnvError; catching the known failures of an environment (connection
//     refused, timeout, session closed) and returning EnvError is the
//     adapter doing its job. The conformance kit cannot force an arbitrary
//     executor into an environment failure; the library-side guarantee is
//     pinned by TestExecutorErrorPropagates in this package.
//
// For NotExecuted and EnvError the observation that enters the model's
// history is the agent's synthetic text (Agent.Synthetic), flagged synthetic;
// the executor's own Observation is kept as the step's audit (bounded to
// MaxAuditBytes) and goes to the event stream, never to the history. An
// Executed observation is bounded by the library (ValidText, the snapshot's
// ObservationLimit, MaxObservationBytes), so an executor cannot make a step
// record too large to store; an executor that bounds its own output says
// what it dropped in TruncatedChars.
//
// A non-nil error is outside the protocol: the library does not catch it. It
// propagates out of Run/Resume unchanged (errors.Is/As reach it), no step
// record and no finish record are written, and the log stays at "action intent
// present, step record absent", which resume reads as "state unknown". The
// library never turns an executor error into EnvError: that would disguise an
// adapter bug as an environment failure. A panic likewise propagates.
//
// Cancellation: when ctx is done, Execute releases what it holds in flight
// (kills the process group, closes the session) and returns promptly with an
// error for which errors.Is(err, context.Canceled) (or DeadlineExceeded)
// holds.
//
// Ownership: the Action (its Args) belongs to the library and MUST NOT be
// modified or retained. Concurrency: the library calls Execute for one action
// of a run at a time — unless the agent allows parallel actions
// (Agent.ParallelActions): then the actions of one batch run concurrently, each
// in its own goroutine. An executor shared by runners, or used with parallel
// actions, MUST be safe for concurrent use.
type ActionExecutor interface {
	Execute(ctx context.Context, action Action) (ActionOutcome, error)
}

// ErrInvalidOutcome is returned (and propagates out of Run/Resume) when an
// executor returns an ActionOutcome whose status is not one of the three
// statuses. Like an executor error, it leaves the action of unknown outcome.
var ErrInvalidOutcome = errors.New("polyloop: executor returned an invalid outcome")

// Store keeps run logs: an append-only sequence of rows per run. The
// Runner owns what the rows hold — it encodes each record once, checks it
// against the log's limits and computes its checksum before it appends,
// and decodes and checks every row it reads back (ReadLog, LogStream) —
// so a store only keeps rows; polylooptest.TestStore checks what it owes.
//
// What a store is given, it may rely on (the Runner checks it first): the
// rows of one Append have consecutive Seq values, in order; Kind is a
// record kind; Data is one JSON object in valid UTF-8, at most
// MaxRecordBytes long; Checksum is its CRC-32C; Record is the record Data
// encodes (see Row). A store need not check any of it.
//
// Contract:
//   - Append is atomic: all the rows of one call become visible, or none
//     do, even if the process dies in the middle.
//   - Append is prefix-durable: when it returns nil, those rows and every
//     earlier row of the run survive a crash or power loss, and no later
//     row is ever visible while an earlier one is lost.
//   - Sequence rule: if the first row's Seq is not exactly the next
//     sequence number of the run (0 for a new run, else one past its last
//     row), Append MUST fail with an error for which
//     errors.Is(err, ErrSeqConflict) holds and write nothing: another
//     writer owns the run.
//   - ReadRows returns the run's rows in seq order, each as it was
//     appended: the same Seq, Kind and Checksum, and Data byte for byte.
//     A store MUST NOT decode, check or repair them (the reader does); a
//     row it kept before it stored checksums comes back with Unchecked
//     set. A RecordKeeper returns the Record of each row instead of bytes.
//   - ReadRows of a run that has no rows returns no rows and a nil error.
//     "Not found" is not an error: a storage failure must never look like
//     a fresh run.
//   - ReadRowsFrom(ctx, runID, from, limit) is the ranged read: the run's
//     rows whose Seq is from or more, in seq order, each as ReadRows
//     returns it, and at most limit of them — the rows from..from+limit-1
//     when the run has them all. Fewer than limit rows (none included) say
//     that the read reached the run's last row: a reader folds a log
//     chunk by chunk, asking from one past the last row it has, until a
//     chunk comes back short (LogStream; ReadLog reads whole). A from beyond
//     the run's last row, or a run without rows, gives no rows and a nil
//     error. Callers pass from >= 0 and limit >= 1; a store may refuse
//     anything else with an error. A chunk MUST NOT skip, repeat or
//     reorder a row, nor hold more than limit: the chunks a reader gets are
//     then, end to end, the run's log as ReadRows would return it.
//     The run_started row of a SnapshotKeeper comes with its Shared
//     snapshot in whichever chunk holds it, and a RecordKeeper's rows
//     carry their Record, as in ReadRows.
//   - Concurrency of reads with Append: ReadRows, and each ReadRowsFrom
//     chunk, reflects a whole number of the run's Appends — every Append
//     that returned nil before the call among them, never a part of one
//     — cut at limit rows for a chunk. Chunks read one after the other may
//     see Appends made between them: as a log only grows, the rows a
//     reader puts together end to end are a prefix of the log as the
//     last chunk saw it, ending at an Append's end (the short chunk).
//   - Errors: any failure is returned as an error; the library wraps it in
//     a *PersistenceError (an adapter may return one itself and its
//     identity is kept). After an error the outcome is unknown — the rows
//     may have been committed with the acknowledgement lost — so the
//     library never retries.
//   - Cancellation: a done ctx may make Append, ReadRows or ReadRowsFrom
//     fail with an error that wraps ctx.Err(); an Append that fails that
//     way is still atomic. A failed ReadRowsFrom returns no rows: a
//     reader never folds part of a chunk.
//   - Ownership: Append MUST NOT retain rows nor their Data after it
//     returns (the Runner reuses them for its next write, as io.Writer's
//     callers reuse p): a store that keeps bytes in memory copies them. A
//     row's Record is the store's to keep: no one modifies it. Rows
//     returned by ReadRows or ReadRowsFrom may share memory with the
//     store: callers MUST NOT modify them.
//   - Concurrency: a Store MUST be safe for concurrent use by many runs.
//
// A record beyond the log's limits, or that does not encode, never reaches
// a store: the Runner refuses it (ErrJSONLimit) before Append, and takes
// that failure as known unwritten (a first Append refused so is
// ErrRunNotStarted).
type Store interface {
	Append(ctx context.Context, runID string, rows []Row) error
	ReadRows(ctx context.Context, runID string) ([]Row, error)
	ReadRowsFrom(ctx context.Context, runID string, from int64, limit int) ([]Row, error)
}

// Errors of the Store contract. Test for them with errors.Is.
var (
	// ErrSeqConflict is what a Store returns when an Append's first record is
	// not the next sequence number of the run: another writer owns the run.
	ErrSeqConflict = errors.New("polyloop: sequence conflict (another writer owns the run)")
	// ErrNotConsecutive is returned by AppendRecords when the records of
	// one Append do not have consecutive seqs (a caller bug, not a
	// conflict). Nothing is written.
	ErrNotConsecutive = errors.New("polyloop: records of one Append must have consecutive seqs")
)

// RunLister is the optional listing interface of a Store, used by the CLI and
// statistics. polylooptest.TestStore checks it (the ListRuns and
// ListRunsOrder checks) when the store implements it.
//
// Contract:
//   - ListRuns returns, for every run the filter matches (RunFilter.Matches;
//     a zero filter matches every run), the summary that RunSummary.Apply
//     folds from the run's records, with RunID set even for a log that does
//     not begin with RunStarted. A store SHOULD keep summaries as it
//     appends, so that listing does not read every log.
//   - Ordering: runs without a RunStarted record (no start time) first,
//     then by start time (the RunStarted record's time), ties broken by run
//     id compared byte by byte — never by a database collation or locale.
//     Limit, when positive, applies after filtering and ordering: the
//     result is the first Limit summaries of the full ordered listing.
//   - No run matching is an empty result and a nil error.
//   - Failures: any failure is returned as a non-nil error with no
//     summaries; a store MUST NOT return part of a listing with a nil error.
//   - Cancellation: a done ctx may make ListRuns fail with an error that
//     wraps ctx.Err().
//   - Concurrency: ListRuns MUST be safe for concurrent use with Append and
//     with other calls. Each summary reflects a whole number of the run's
//     Appends, every Append that returned nil before ListRuns was called
//     among them, and never a part of one (appends are atomic); the
//     summaries of different runs need not be taken at the same instant.
//   - Ownership: the returned slice belongs to the caller.
type RunLister interface {
	ListRuns(ctx context.Context, filter RunFilter) ([]RunSummary, error)
}

// EventSink receives events: observations of facts that are already durable
// in the log.
//
// Contract:
//   - The library emits an event only after the record it reflects has been
//     appended successfully.
//   - A failed delivery (a returned error, a panic, or a call that outlives
//     the runner's per-event timeout) never interrupts the loop. The library
//     counts failures per sink and disables a sink for the rest of the run
//     after its first panic or after more consecutive errors than allowed
//     (SinkPolicy); counts and disabled sinks appear in RunResult and in the
//     RunFinished record. Nothing already established is rolled back.
//   - Emit MUST return its failures as errors, never swallow them.
//   - Emit SHOULD honour ctx: the runner cancels it when the per-event
//     timeout passes.
//   - Ownership: the event and what it points to belong to the library;
//     a sink MUST NOT modify them and must copy what it keeps.
//   - Concurrency: one runner emits to a sink from one goroutine at a time,
//     but a sink shared by several runners (or a timed-out call still
//     running) sees concurrent calls; a sink that is shared MUST be safe for
//     concurrent use.
type EventSink interface {
	Emit(ctx context.Context, ev Event) error
}

// Describer is implemented by a ModelClient, DecisionParser or
// ActionExecutor that wants its identity and behaviour-relevant configuration
// in the parameter snapshot. Without it the snapshot holds only the Go type
// name. Describe MUST be deterministic and MUST NOT include secrets.
type Describer interface {
	Describe() Component
}
