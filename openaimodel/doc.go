// Package openaimodel is a polyloop.ModelClient for OpenAI-compatible Chat
// Completions APIs — OpenAI itself, vLLM, Ollama, llama.cpp's server and
// gateways — built on the official SDK, github.com/openai/openai-go/v3.
//
// # Configuration
//
// New takes Options: the base URL (DefaultBaseURL when empty; e.g.
// "http://localhost:11434/v1/" for Ollama), the API key (Options.APIKey, else
// the OPENAI_API_KEY environment variable; OpenAI's own API needs one, and New
// fails with ErrNoAPIKey without it, while servers at another base URL that
// need no key accept an empty one), a default model, and the retry bounds. What the model sees and
// how the client behaves goes into the run's snapshot through Describe; the key
// never does. Note that the SDK also reads OPENAI_ORG_ID, OPENAI_PROJECT_ID
// and OPENAI_CUSTOM_HEADERS from the environment; the base URL and the key
// are always the ones this package resolved.
//
// The request's polyloop.ModelParams choose the model (else Options.Model),
// temperature, top_p, seed, stop sequences and the output token limit (sent
// as max_completion_tokens, or max_tokens with Options.MaxTokensField), and,
// when tools are sent, ParallelToolCalls as parallel_tool_calls (unset: not
// sent, the API's default allows several calls per reply; the API refuses
// the parameter without tools). Extra entries are set as top-level fields of
// the request body.
//
// # History
//
// The library's history is sent as Chat Completions messages, always in a
// form the API accepts: each assistant message with tool calls is followed
// at once by exactly one tool message per call id, in the order of the calls
// (a batch of several actions gives one tool message per action). A call
// the history does not answer (a reply whose calls the parser rejected as
// Invalid, or a call the parser did not choose) gets a synthesized result
// whose text is Options.UnansweredToolResult; the observations and feedback
// of the step then follow as user messages. An observation whose ToolCallID
// is empty or answers no pending call (code actions, JSON-in-text actions)
// is sent as a user message, verbatim.
//
// # Replies
//
// A reply carries the first choice's text, its tool calls, the model id the
// server reports, the finish reason, the usage (prompt, completion, cached
// and reasoning tokens) and the x-request-id header. A refusal
// (message.refusal) is reported as the reply's Text with FinishReason
// "refusal": it is an answer, not a failure. Tool-call arguments that are
// not valid JSON are kept as a JSON string, so that a parser can reject them
// with feedback; a tool call without an id (some local servers) gets one
// derived from the library's call id. Cost comes from a price table by the
// model id of the reply: Options.Prices when given, else — only when BaseURL
// is OpenAI's API (the host of DefaultBaseURL) — the table shipped with the
// package (prices.json, see PriceTableVersion). An OpenAI-compatible server
// elsewhere (vLLM, Ollama, a gateway) charges its own prices or none, so its
// calls have unknown cost unless Options.Prices is set (DefaultPrices() for a
// gateway that passes OpenAI's prices through). A model the table does not
// know, or a reply without usage, gives a nil CostUSD: unknown, never zero.
// Describe names the table in force ("none (costs unknown)" without one),
// and holds the prices of a table of the caller's own. KnowsCost
// (polyloop.CostReporter) says whether the table prices a model: the
// Runner refuses a cost budget on a model it does not price.
//
// # Failures and retries
//
// Every failure is an error: *APIError for an error status (HTTP status,
// provider error type, code and param, request id, Retry-After),
// *ConnectionError when no complete response arrived (refused, reset, a body
// cut short, an attempt timeout), *ResponseError when a response could not
// be understood; a failed call that is known to have consumed tokens wraps
// its failure in a *UsageError (see Streaming). All implement diag.Fielder and none contains the API key:
// the provider's message is stored with the key redacted, and the SDK's own
// error values — whose text includes raw response bodies — are not wrapped.
//
// The SDK's hidden retries are disabled. The client retries only what its
// explicit policy says, with the count from ModelParams.Retries and the base
// backoff from ModelParams.RetryBackoffMS (both in the snapshot; 0 is
// allowed): HTTP 429 and 5xx statuses and connection errors, with an
// exponential backoff doubled per retry, without jitter, capped at
// Options.MaxBackoff, and never shorter than the server's Retry-After (or
// retry-after-ms). A Retry-After longer than Options.MaxRetryAfter ends the
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
// request with "stream": true and stream_options.include_usage, and delivers
// the reply's deltas while the server sends them (the runner streams when it
// has event sinks). The retry policy is the same; an attempt that delivered
// deltas and is retried — a stream cut short, or an error event such as a
// rate limit in the middle of a stream — is superseded
// (polyloop.Delta{Attempt: n, Superseded: true}) before the next attempt's
// deltas. An error event is an *APIError with InStream set and the status
// OpenAI answers with for its type (429 for rate limits, 500 for server
// errors), so that it is retried as that status would be; a stream that ends
// without a finish reason is a *ConnectionError caused by
// ErrIncompleteStream. OpenAI reports a stream's usage only in its last
// chunk: an attempt that delivered deltas and failed before it was billed an
// unknown amount, so the call's tokens and cost are unknown (see Failures
// and retries). The reply is the one Complete returns for the same completion.
package openaimodel
