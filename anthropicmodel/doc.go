// Package anthropicmodel is a polyloop.ModelClient for the Anthropic Messages
// API, built on the official SDK, github.com/anthropics/anthropic-sdk-go/v2
// (which sends anthropic-version 2026-10-21 and the key as a bearer token).
//
// # Configuration
//
// New takes Options: the API key (Options.APIKey, else the ANTHROPIC_API_KEY
// environment variable; New fails without one), the base URL, a default
// model and max_tokens, and the retry bounds. The SDK reads nothing from the
// environment (no profile, no ANTHROPIC_BASE_URL): what the client does is
// what Options and the request say. Describe puts the client's
// configuration in the run's snapshot; the key never goes there.
//
// The request's polyloop.ModelParams choose the model (else Options.Model),
// max_tokens (else Options.MaxTokens, else DefaultMaxTokens: the API
// requires one), the stop sequences and, when tools are sent,
// ParallelToolCalls as tool_choice {"type": "auto",
// "disable_parallel_tool_use": !ParallelToolCalls} (unset: no tool_choice,
// the API's default allows several tool uses per reply); Extra entries are
// set as top-level fields of the body. The API has no temperature, top_p or seed (version
// 2026-10-21 answers 400 to the first two, whatever their value): a request
// that sets them fails with ErrUnsupportedParam before anything is sent,
// unless Options.DropUnsupportedParams leaves them out — a choice Describe
// records, so the snapshot never claims a temperature that was not applied.
//
// # History
//
// System messages become the system prompt. The other messages become
// alternating user and assistant turns: consecutive messages of one role are
// merged into one turn; each assistant message's tool calls (tool_use
// blocks) are answered by tool_result blocks at the start of the next user
// turn, exactly once per call and in the order of the calls (a batch of
// several actions gives one tool_result block per tool_use, all in that one
// user turn). A call the history does not answer (a reply whose calls the
// parser rejected as Invalid, or a call the parser did not choose) gets a
// synthesized result whose text is Options.UnansweredToolResult. Synthetic
// observations (the library's text for an action not executed) are marked
// is_error. An observation whose ToolCallID is empty or answers no pending
// call (code actions, JSON-in-text actions) is sent as user text, verbatim,
// or as Options.EmptyObservation when it has no visible character (the
// output of `mkdir x`): it is never left out, so the assistant turns around
// it stay apart. Other texts without a visible character are left out (the API
// refuses text blocks of white space): an assistant reply with neither
// visible text nor tool calls leaves no turn, and a tool result without
// visible text is sent without content. A history that ends with an
// assistant message is refused with ErrBadRequest, since the API would
// read that turn as a prefill to continue.
//
// # Replies
//
// A reply carries the text blocks joined, the tool_use blocks as tool calls,
// the model id, the stop reason as FinishReason ("end_turn", "tool_use",
// "max_tokens", "refusal", ...; a refusal is an answer, not a failure), the
// request-id header and the usage: InputTokens counts input_tokens plus
// cache reads and writes (so that it means the same as for other clients),
// CachedTokens the cache reads, ReasoningTokens the thinking tokens. Other
// blocks (thinking, server tools) are not part of the reply. Cost comes from
// a price table by the model id of the reply, with cache reads and writes at
// their own prices: Options.Prices when given, else — only when BaseURL is
// Anthropic's API (the host of DefaultBaseURL) — the table shipped with the
// package (prices.json, see PriceTableVersion). Through another server (a
// gateway or proxy) calls have unknown cost unless Options.Prices is set. A
// model the table does not know gives a nil CostUSD: unknown, never zero.
// Describe names the table in force ("none (costs unknown)" without one),
// and holds the prices of a table of the caller's own. KnowsCost
// (polyloop.CostReporter) says whether the table prices a model: the
// Runner refuses a cost budget on a model it does not price.
//
// # Failures and retries
//
// Every failure is an error: *APIError for an error status (HTTP status,
// error type such as "rate_limit_error" or "overloaded_error", error code,
// request id, Retry-After), *ConnectionError when no complete response
// arrived, *ResponseError when a response could not be understood; a failed
// call that consumed tokens wraps its failure in a *UsageError (see
// Streaming). All
// implement diag.Fielder and none contains the API key: the provider's
// message is kept with the key redacted, and the SDK's own error values —
// whose text includes raw response bodies — are not wrapped.
//
// The SDK's hidden retries are disabled. The client retries only what its
// explicit policy says, with the count from ModelParams.Retries and the base
// backoff from ModelParams.RetryBackoffMS (both in the snapshot; 0 is
// allowed): HTTP 429 and 5xx statuses (529 "overloaded" included) and
// connection errors, with an exponential backoff doubled per retry, without
// jitter, capped at Options.MaxBackoff, and never shorter than the server's
// Retry-After. A Retry-After longer than Options.MaxRetryAfter ends the
// retries. ModelReply.Attempts and the errors' Attempts report how many
// requests were made.
//
// What failed attempts cost: an attempt whose request was sent and that got
// no complete answer — it timed out waiting, lost its connection, or had its
// body or stream cut short — may have been billed for what it never
// reported. The call's tokens are then a lower bound and its cost unknown
// (polyloop.Usage.TokensUnknown, a nil CostUSD), on the reply of a call that
// then succeeded or on the *UsageError of one that failed. An attempt the
// server never received (a refused connection, a failed TLS handshake) or
// answered with an error status is not billed and adds nothing.
//
// Cancellation returns promptly, closing the connection in flight, with an
// error for which errors.Is(err, ctx.Err()) holds.
//
// # Streaming
//
// Client implements polyloop.StreamingModelClient: Stream sends the same
// request with "stream": true and delivers the reply's deltas while the
// server sends them (the runner streams when it has event sinks). The retry
// policy is the same; an attempt that delivered deltas and is retried — a
// stream cut short, or an error event such as overloaded_error or
// rate_limit_error in the middle of a stream — is superseded
// (polyloop.Delta{Attempt: n, Superseded: true}) before the next attempt's
// deltas. An error event is an *APIError with InStream set and the status
// the API documents for its type (529 for overloaded_error, 429 for
// rate_limit_error, ...), so that it is retried as that status would be; a
// stream that ends without message_stop is a *ConnectionError caused by
// ErrIncompleteStream. The stream reports usage early (message_start: the
// input tokens; message_delta: the output tokens): a failed attempt's usage
// is added to the reply of a call that then succeeds, or carried by a
// *UsageError when the call fails, so a billed call is never free; when the
// stream broke (rather than ending with an error event) what it reported is
// a lower bound (see Failures and retries). The
// reply is the one Complete returns for the same message.
package anthropicmodel
