// Package polyloop runs LLM agent loops — model call, decide, act, observe,
// repeat — where every run is a durable, append-only log that can be resumed
// step by step after a crash, and whose failures are accounted for honestly.
//
// # The pieces
//
// Runner is the type users touch. It calls out through five seams, each a
// small interface whose contract is in its doc comment: ModelClient,
// DecisionParser, ActionExecutor, Store and EventSink. Adapters live in their
// own packages (scriptmodel, openaimodel, anthropicmodel, replaymodel;
// toolcallparser, jsonparser, codeparser; funcexec, shellexec, mcpexec;
// memstore, sqlitestore, pgstore; slogsink, otelsink); the conformance kit
// polylooptest lets an adapter prove it honours its seam.
//
// # The loop and the log
//
// Each step is one model call, the decision parsed from its reply, and at
// most one action. Every execution has an intent record written before it
// and a result record after it; records with no side effect between them
// share one Append, so a step costs two durable writes. The log is the single
// source of truth: History, ComputeTotals and PlanResume are functions of it.
//
// # Failures
//
// A model failure is recorded and finishes the run with StopLLMError. An
// action that ran and failed is an ordinary observation; an environment that
// broke is EnvError and finishes the run with StopEnvError. An executor error
// or panic and a parser panic propagate out of Run and Resume unchanged,
// leaving the log at intent-without-result, which Resume reads as unknown.
// Store failures surface as *PersistenceError. Cancellation passes through
// untouched and invents no record: what already happened (a model result, a
// step record, a determined finish) is still written, nothing new starts.
//
// # Resume
//
// Resume reads the log and follows PlanResume: model calls of unknown outcome
// are made again; actions of unknown outcome are replayed when their tool is
// ReplaySafe or ReplayIdempotent (with the same idempotency key); otherwise
// the executor's Reconciler, if it has one, is asked whether the action
// happened (its outcome is adopted, or the action runs again, or the run
// finishes StopResumeStateUnknown), and without one the run finishes with
// StopResumeStateUnknown. Every action execution has an idempotency key
// (IdempotencyKeyFor, IdempotencyKeyFromContext) recorded on its intent. A
// deterministic model and executor give the same log whether or not the run
// was interrupted, apart from timestamps and orphaned intents.
//
// The log format is documented in docs/log-format.md.
//
// # Files
//
// The package is laid out by feature and layer, the layers of etcd raft: a
// feature's types, records and entry points in <feature>.go (gate.go,
// memory*.go, child.go); the log's fold in state.go, its grammar in
// state_grammar.go and each feature's part of it in state_<feature>.go;
// the pure step machine in step.go and step_<feature>.go; the driver that
// performs its effects in driver.go and driver_<feature>.go; the way every
// entry point opens a run in open.go; the log's bytes — rows, encoding,
// decoding, the reader, the limits — in codec_*.go.
package polyloop
