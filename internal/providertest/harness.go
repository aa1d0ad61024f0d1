package providertest

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/pricing"
	"github.com/polyloop/polyloop/internal/provider"
)

// UserOnly is a history of one user message.
var UserOnly = []polyloop.Message{{Role: polyloop.RoleUser, Content: "Hi"}}

// SecretKey is a made-up key: the tests prove it reaches the server and goes
// nowhere else.
const SecretKey = "sk-test-5e5e5e5e5e5e5e5e-not-a-real-key"

// Client is what the shared tests need of a model client.
type Client interface {
	polyloop.ModelClient
	polyloop.Describer
}

// Options are the client options the shared tests set; the harness maps
// them to the client's own Options.
type Options struct {
	BaseURL    string
	APIKey     string // empty: from the client's environment variable
	Model      string
	Timeout    time.Duration
	HTTPClient *http.Client
	// Connections is the client's Options.Connections.
	Connections int
	// Prices is the price table (NewDefault: nil is the package's
	// default).
	Prices *pricing.Table
}

// Harness describes a client to the shared tests. P is the type the client
// instantiates the provider error types with.
type Harness[P provider.Package] struct {
	Endpoint Endpoint
	// Model is the model the tests' requests name.
	Model string
	// KeyEnv is the environment variable the client reads its key from.
	KeyEnv string
	// RequestIDHeader is the response header with the request's id.
	RequestIDHeader string
	// ErrAttemptTimeout is the client's cause of an attempt that timed out.
	ErrAttemptTimeout error
	// New returns a client. The fake server is not the provider's API, so
	// New passes the shipped prices explicitly, to price the tests' calls.
	New func(Options) (Client, error)
	// NewDefault returns a client with the package's default pricing (only
	// the provider's own API is priced), and PriceTable is the version of
	// the shipped table.
	NewDefault func(Options) (Client, error)
	PriceTable string
	// OK is a success, with an SSE of the same reply; ErrorStatus a
	// retryable error status.
	OK, ErrorStatus Response
	// Overloaded is a retryable error status other than ErrorStatus.
	Overloaded Response
	// RetryAfter150ms is a 429 that asks for a wait of 150ms.
	RetryAfter150ms Response
	// Rejected is a 401 whose fixture echoes the key; RejectedFields are
	// what the stored failure of the run it ends must show (e.g.
	// `"http_status":"401"`).
	Rejected       Response
	RejectedFields []string
	// RateLimited is an error status and RateLimitedFields the diagnostic
	// fields its error must give.
	RateLimited       Response
	RateLimitedFields map[string]string
	// APIErrors are error statuses and the errors they must give.
	APIErrors []APIErrorCase[P]
	// Unreadable maps fixtures of success responses that are not replies
	// to the cause their *ResponseError must wrap (nil: any).
	Unreadable map[string]error
	// Replies are success responses and the replies they must give.
	Replies []ReplyCase
	// Refused are success responses the client receives and refuses, with
	// the tokens their bodies report (CheckRefusedKeepUsage, and the
	// contract kit's RefusedKeepsUsage).
	Refused map[string]RefusedCase
	// Failing are the responses besides the standard ones (see
	// TestContract) that fail a call, named for the contract kit
	// ("http_529").
	Failing map[string]Response
	// EndToEnd is the client's successful run through the Runner.
	EndToEnd EndToEnd
	// ToolCallBody is the body of a success response whose reply is one
	// call of tool "f" (id "call_1") with the given JSON arguments, in the
	// client's wire format.
	ToolCallBody func(args string) []byte
	// DeepestDecoded is the deepest arguments the client's SDK decodes in
	// such a body (arguments the wire nests inside the body's JSON, rather
	// than in a string, lose the levels around them).
	DeepestDecoded int
	// Stream describes the client's streamed responses.
	Stream StreamCase
}

// Serve starts a fake server of the client's API answering with script.
func (h *Harness[P]) Serve(t testing.TB, script ...Response) *Server {
	t.Helper()
	return NewServer(t, h.Endpoint, script...)
}

// Client is a client of baseURL with a test key.
func (h *Harness[P]) Client(t testing.TB, baseURL string) Client {
	t.Helper()
	return h.must(t, Options{BaseURL: baseURL, APIKey: "test-key"})
}

func (h *Harness[P]) must(t testing.TB, o Options) Client {
	t.Helper()
	c, err := h.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Call asks c for a reply to UserOnly with the harness's model, the given
// retries and a 1ms backoff.
func (h *Harness[P]) Call(t testing.TB, c polyloop.ModelClient, retries int) (polyloop.ModelReply, error) {
	t.Helper()
	return c.Complete(context.Background(), h.Request(polyloop.ModelParams{Retries: retries, RetryBackoffMS: 1}))
}

// Request is a request for UserOnly with mp and the harness's model.
func (h *Harness[P]) Request(mp polyloop.ModelParams) polyloop.ModelRequest {
	mp.Model = h.Model
	return polyloop.ModelRequest{Messages: UserOnly, Params: mp}
}
