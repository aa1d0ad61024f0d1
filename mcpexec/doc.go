// Package mcpexec is a polyloop.ActionExecutor whose tools are those of a
// Model Context Protocol server, reached with the official SDK
// (github.com/modelcontextprotocol/go-sdk) over stdio (a command it starts),
// streamable HTTP (a URL) or any mcp.Transport.
//
// New connects, lists the server's tools once (tools/list) and keeps that
// list for the executor's life: ToolSpecs returns it for polyloop.Agent.Tools,
// so the tools the model is shown are the tools the executor accepts. A
// server whose tool list changes later is not followed; a tool that vanished
// is reported by the server as invalid parameters, which is NotExecuted.
//
// Credentials for a streamable HTTP server go in Options.Headers (for
// example Authorization), set on every request by the HTTP client's
// transport, or come from OAuth: Options.OAuthHandler, built by
// NewOAuthHandler (the authorization code grant with a token cache, or the
// client credentials grant), is passed to the SDK's transport. Neither
// enters Describe, a record or an event. The URL's user information and
// query are left out of Describe too, but headers are the place for a key.
//
// Options.Prefix puts a prefix before every tool name the executor exposes,
// so that two servers offering the same name can serve one agent.
//
// A stdio server's standard error is dropped (or copied to Options.Stderr),
// but its last StderrTail bytes are kept: a server that dies at start is
// reported by a *StartError that shows them.
//
// On unix a stdio server runs in a process group of its own.
// A terminal's Ctrl-C, which sends SIGINT to the whole foreground group,
// therefore reaches the program that drives the run and not the server, so
// the call in flight can finish when the program asks the run to stop at
// the next step boundary. Close closes the server's stdin, then signals
// the group (SIGTERM, then SIGKILL, Options.TerminateTimeout apart), and
// when the server exits, on its own or so, whatever it left in its group
// is killed. The group is tied to the life of the program that started
// the server: if it is killed (kill -9, a crash), the program's watchdog,
// a /bin/sh reading a pipe only that program holds open, kills the whole
// group, whatever signal dispositions the program inherited (nohup). The
// server is started through /bin/sh, which waits until the watchdog knows
// the group and then executes the server in its place. A
// process that leaves the group on purpose (setsid) escapes this.
//
// # Replay policy
//
// A tool annotated readOnlyHint or idempotentHint is polyloop.ReplaySafe;
// every other tool is NeverReplay. Annotations come from the server and are
// untrusted, so Options.Replay overrides them per tool, and ToolSpecs reports
// the policy in force — the override, which is what enters the snapshot.
//
// # Status mapping
//
// The status is decided by the client, before and around the call, never by
// reading error text:
//
//   - a code action, a tool name not in the list, arguments that are not a
//     JSON object or fail the tool's input schema (validated with
//     github.com/google/jsonschema-go) → NotExecuted, and the server is never
//     called. Real servers report these as ordinary isError results, which
//     would look like a tool that ran.
//   - a result → Executed, with the content rendered as text; a result with
//     isError is Executed as well (the tool ran and failed).
//   - a result that asks for more input (a multi-round-trip input request the
//     executor cannot answer) → Executed: the tool ran up to its question,
//     and the observation says it did not finish.
//   - a JSON-RPC error answering the call: method not found or invalid params
//     → NotExecuted, unless the server showed a tool at work while the call
//     was in flight: it sent this client a request (elicitation, sampling,
//     roots, any method but ping), whether the client answered or refused
//     it, or a progress or log notification. Then the tool may have
//     started, the error may be a refusal of the client's relayed by the
//     server, and the call is Executed with the error as its observation.
//     The rule, in database/sql's words for driver.ErrBadConn: NotExecuted
//     is never returned when the action may have started. Every call
//     carries a progress token, so that a server that reports progress can.
//     Messages are counted as they are read, before the SDK handles them
//     (over streamable HTTP, in the event stream the HTTP client reads), and
//     per session, not per call (over stdio the protocol does not tie a
//     server's request to the call it serves), so a sign during concurrent
//     calls marks them all as started — the safe direction; parse error or
//     invalid request (the two sides do not
//     speak the same protocol) and the SDK's own transport codes (a request
//     that could not be delivered or was turned away by the HTTP server) →
//     EnvError; any other code (an internal error,
//     a server-defined code: the server took the call and its handler failed)
//     → Executed, with the code and message as the observation.
//   - the connection closed or the server process gone (mcp.ErrConnectionClosed,
//     mcp.ErrSessionMissing, io.EOF, io.ErrUnexpectedEOF, a closed or broken
//     pipe, a network error) →
//     EnvError.
//   - a message from a streamable HTTP server larger than MaxMessageBytes →
//     EnvError (it is not read, and the session is closed). Over stdio the
//     SDK refuses such a line itself, with an error that has no identity the
//     executor can test: Execute returns it (see below), and the session's
//     next call is EnvError.
//   - no answer within Options.CallTimeout (default DefaultCallTimeout) →
//     the SDK sends notifications/cancelled, and the call is EnvError with
//     an observation that names the timeout: a server that does not answer
//     cannot keep serving. (New is bounded likewise by
//     Options.StartTimeout: a *StartError wrapping ErrTimeout.)
//   - ctx done → the SDK sends notifications/cancelled and Execute returns an
//     error for which errors.Is(err, ctx.Err()) holds.
//   - any other error is outside the protocol and is returned as an error
//     (the action's outcome is unknown).
//
// # Content
//
// Text blocks are joined with newlines. Images, audio and binary resources
// are described by type, MIME type and size, never inlined. Embedded text
// resources are included as text; resource links are described. Structured
// content is rendered as JSON, unless the content blocks already carry it:
// a text block holds the same JSON value (servers are asked to send both),
// or each of its values is a string the text blocks contain or a copy of a
// content block (server-filesystem sends {"content": <its text>}). Content
// is never repeated in an observation.
//
// What the executor reads is bounded: each message from the server to
// MaxMessageBytes (16 MiB; see the status mapping), and the observation to
// polyloop.MaxObservationBytes, kept as polyloop.ValidText: a longer text is
// cut at a character boundary with a last line "[output truncated: N
// characters dropped]", and N is the outcome's TruncatedChars.
//
// # Roots, elicitation and sampling
//
// The client advertises no roots capability unless Options.Roots is set: a
// server may otherwise widen its own sandbox to the client's roots. Only
// with roots configured does the client answer a server's multi-round-trip
// input requests, with the roots.
//
// Elicitation (asking the user) and sampling (asking the client's model)
// are out of scope for an unattended loop: the executor advertises neither
// capability, and the SDK client refuses such a request with an
// invalid-params error. A call during which that happened is Executed (see
// above), never NotExecuted.
package mcpexec
