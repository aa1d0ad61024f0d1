// Package otelsink turns PolyLoop's event stream into OpenTelemetry traces
// that follow the GenAI semantic conventions (semconv v1.41.0).
//
// It uses only the OpenTelemetry trace API: the application chooses the
// TracerProvider (Options.TracerProvider, or the global one). NewFromEnv
// builds an OTLP/HTTP exporter from the standard OTEL_EXPORTER_OTLP_*
// variables, for the CLI; it refuses another protocol (grpc, http/json)
// with ErrUnsupportedProtocol.
//
// # Spans
//
// One invocation of Runner.Run or Runner.Resume is one span, kind INTERNAL;
// with Options.RunRoot, the run has a root span above its invocations:
//
//	run {agent}                 the run's root (RunRoot): run_started → at once, flushed then
//	├── invoke_agent {agent}    run_started or run_resumed → run_finished
//	│   ├── chat {model}        model_call_started → model_call_finished (kind CLIENT)
//	│   ├── execute_tool {tool} action_started → action_finished (kind INTERNAL)
//	│   └── ...
//	└── invoke_agent {agent}    a resume, in this process or another
//
// Every span starts and ends at the At of the event that opens or closes it,
// which is the time the reflected record was built, so a trace shows the
// loop's own timeline rather than the sink's delivery delays. An invoke_agent
// span takes as parent the span found in the context of the run_started or
// run_resumed event (the context the caller gave Run or Resume); without one
// its parent is the run's anchor (see Resumed runs), so that every
// invocation of the run is in one trace. A child run started by
// polyloop.InvokeChild from inside an action is nested under that action's
// execute_tool span, when the same sink records the parent run (the
// agent-as-a-tool shape of the conventions).
//
// Attributes follow the conventions where they have a name for the fact:
// gen_ai.operation.name, gen_ai.agent.name, gen_ai.conversation.id (the run
// id), gen_ai.provider.name, gen_ai.request.model, gen_ai.request.temperature,
// gen_ai.request.top_p, gen_ai.request.seed, gen_ai.request.max_tokens,
// server.address and server.port (the host and port of the base_url in the
// model client's Describe config, when it has one), gen_ai.response.model,
// gen_ai.response.finish_reasons, gen_ai.usage.input_tokens and
// gen_ai.usage.output_tokens (left out when the reply reports no usage at
// all), gen_ai.tool.name (for a code action, its language), gen_ai.tool.type
// ("function", for tool calls), gen_ai.tool.description (from the snapshot's
// tool specs), gen_ai.tool.call.id and error.type. The polyloop.* namespace
// holds the rest: polyloop.run_id, polyloop.step, polyloop.seq (the seq of
// the record that opened the span), polyloop.end_seq (the record that closed
// it), polyloop.stop_reason, polyloop.action.status,
// polyloop.observation.synthetic, polyloop.snapshot_hash,
// polyloop.resume.plan, and the totals of a finished run (polyloop.totals.*,
// which cover the whole log, not one invocation). An invoke_agent span's
// gen_ai.usage.input_tokens and gen_ai.usage.output_tokens are the sums over
// its own chat spans (left out when none reported usage), so that summing
// the invocations of a resumed run counts each token once. The snapshot of a
// config_overridden event replaces the run's for the spans that follow.
// Step completions, configuration overrides and child receptions are span
// events on the invoke_agent span.
//
// Message contents (tool arguments and the executor's observation) are not
// recorded unless Options.IncludeContent is set, as the conventions
// recommend; snapshots are never recorded, only their hash.
//
// # Errors
//
// error.type takes values from a small set, so that failures group. A
// failed model call sets it from the failure's diagnostic (see
// ErrorTypeTimeout and the constants after it): timeout (a deadline in the
// cause chain), the provider's own error code (provider_code:
// rate_limit_exceeded, overloaded_error, ...), http_4xx or http_5xx (an
// HTTP status without a code), connection_error, bad_response, or _OTHER;
// the failure's Go type and message go in an "exception" span event
// (exception.type, exception.message), and the status is Error. An action with
// status env_error or not_executed sets error.type to the status and status
// Error; an executed action leaves the status unset whatever its result. A run
// finishing with llm_error, env_error or resume_state_unknown sets error.type
// to the stop reason and status Error on the invoke_agent span.
//
// # Invocations that end without run_finished
//
// A cancelled run, an executor error or a store failure end Run or Resume
// without a run_finished event, and the sink cannot see the call return. The
// invocation's spans stay open until the caller ends them: EndRun(runID, err)
// ends one run's open spans with status Error (call it when Run or Resume
// returns an error), Close ends every open span (call it before shutting the
// TracerProvider down). A run_started or run_resumed for a run whose previous
// invocation is still open also ends that invocation, with status Error.
// The chat or execute_tool span in flight ends with its invocation's cause:
// error.type canceled or deadline_exceeded for a cancelled context,
// persistence_error for a store failure, _OTHER (the error's type and
// message in the status) for any other error, polyloop.unfinished when no
// cause is known (Close, a superseded invocation, EndRun with a nil error).
//
// # Resumed runs
//
// Each run has an anchor: a remote span context whose trace and span ids are
// derived from the run id alone (RunAnchor). An invoke_agent span whose
// caller gave no span is a child of the anchor, so every invocation of a
// run, in any process, is in the anchor's trace. With Options.RunRoot and a
// TracerProvider whose ids come from IDGenerator (NewFromEnv sets up both),
// the run's first invocation also exports the run's root span, "run
// {agent}", with the anchor's own ids: every invocation's parent is then a
// span the backend has, and the trace is well-formed (one root, CHILD_OF
// references only). The root starts at run_started and ends at once, and
// the sink flushes the TracerProvider then, before the run's first model
// call: a first invocation killed before its end (SIGKILL, a crash) loses
// its own spans but not the root, so the resumed invocations still have
// their parent. The invocations outlast the root, as the work of a run
// outlasts its start; no span could cover the run, whose end is not known
// until it finishes, possibly in another process. Without RunRoot no span has the anchor's ids, and
// backends show the invocations as roots whose parent is missing. An
// invoke_agent span that runs under a caller's span (not the anchor) links
// to the anchor (link attribute polyloop.link.type = "run"), which joins
// the run's invocations across the callers' traces; one whose parent is
// the anchor has no such link, which would only repeat the parent (and
// which backends such as Jaeger read as a FOLLOWS_FROM parent). A resumed
// invocation also links to the
// previous invocation's invoke_agent span (polyloop.link.type =
// "previous_invocation") when this sink saw that invocation end without
// run_finished (in the same process).
// The sink remembers one span context per run whose invocation ended that
// way, until the run is resumed or finishes.
//
// # Concurrency
//
// A Sink is safe for concurrent use by any number of runners and runs: its
// state is keyed by run id under one mutex.
package otelsink
