package provider

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/polyloop/polyloop"
)

// attemptScript is what one scripted attempt of a stream does: it delivers
// texts, reports usage (when set), then returns reply or fails with err.
type attemptScript struct {
	texts []string
	usage *polyloop.Usage
	err   error
	reply polyloop.ModelReply
}

// scriptedSend plays one attemptScript per attempt.
func scriptedSend(attempts ...attemptScript) Send {
	n := 0
	return func(ctx context.Context, x *Exchange) (polyloop.ModelReply, error) {
		a := attempts[min(n, len(attempts)-1)]
		n++
		for _, s := range a.texts {
			x.Emit(polyloop.Delta{Text: s})
		}
		if a.usage != nil {
			x.Report(*a.usage)
		}
		if a.err != nil {
			return polyloop.ModelReply{}, a.err
		}
		return a.reply, nil
	}
}

// deltaLog records deltas as "attempt:text" or "attempt:superseded".
type deltaLog []string

func (l *deltaLog) add(d polyloop.Delta) {
	if d.Superseded {
		*l = append(*l, fmt.Sprintf("%d:superseded", d.Attempt))
		return
	}
	*l = append(*l, fmt.Sprintf("%d:%s", d.Attempt, d.Text))
}

func cost(v float64) *float64 { return &v }

func streamCaller() *Caller[testPkg] {
	return &Caller[testPkg]{Settings: Settings{MaxBackoff: 1, MaxRetryAfter: 1}}
}

// errReset is a connection reset, a new value each time: the retry loop
// sets the attempts of the error it returns, so parallel tests must not
// share one.
func errReset() *ConnectionError[testPkg] { return &ConnectionError[testPkg]{Err: syscall.ECONNRESET} }

// A retried attempt that previewed something is superseded before the next
// attempt's deltas; one that previewed nothing is not announced.
func TestStreamSupersedesARetriedAttempt(t *testing.T) {
	t.Parallel()
	var got deltaLog
	send := scriptedSend(
		attemptScript{texts: []string{"Hel", "p"}, err: errReset()},
		attemptScript{err: &APIError[testPkg]{StatusCode: 503}},
		attemptScript{texts: []string{"Hel", "lo"}, reply: polyloop.ModelReply{Text: "Hello"}},
	)
	reply, err := streamCaller().Stream(context.Background(), polyloop.ModelParams{Retries: 3}, got.add, send)
	if err != nil {
		t.Fatal(err)
	}
	want := deltaLog{"1:Hel", "1:p", "1:superseded", "3:Hel", "3:lo"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("deltas %q, want %q", got, want)
	}
	if reply.Attempts != 3 || reply.Text != "Hello" {
		t.Errorf("reply %+v, want the third attempt's", reply)
	}
}

// The last attempt of a failed call is not announced by the client (the
// library announces it), and what it reported of its usage is on the error.
func TestStreamFailureCarriesUsage(t *testing.T) {
	t.Parallel()
	var got deltaLog
	u := &polyloop.Usage{InputTokens: 12, OutputTokens: 3, CostUSD: cost(0.5)}
	send := scriptedSend(attemptScript{texts: []string{"Par", "tial"}, usage: u, err: errReset()})
	_, err := streamCaller().Stream(context.Background(), polyloop.ModelParams{}, got.add, send)
	if want := (deltaLog{"1:Par", "1:tial"}); !reflect.DeepEqual(got, want) {
		t.Errorf("deltas %q, want %q", got, want)
	}
	var uc polyloop.UsageCarrier
	if !errors.As(err, &uc) {
		t.Fatalf("err = %v (%T); want a polyloop.UsageCarrier", err, err)
	}
	if cu := uc.CallUsage(); cu.InputTokens != 12 || cu.OutputTokens != 3 || cu.CostUSD == nil || *cu.CostUSD != 0.5 {
		t.Errorf("usage %+v, want what the stream reported", cu)
	}
	var connErr *ConnectionError[testPkg]
	if !errors.As(err, &connErr) || connErr.Attempts != 1 {
		t.Errorf("err = %v; want the *ConnectionError of the one attempt inside", err)
	}
}

// A stream that previewed deltas was billed even when it reported no usage
// before it broke: the error carries usage of unknown cost, so the run's
// totals cannot read the call as free.
func TestStreamBilledWithoutUsageIsUnknown(t *testing.T) {
	t.Parallel()
	send := scriptedSend(attemptScript{texts: []string{"x"}, err: errReset()})
	_, err := streamCaller().Stream(context.Background(), polyloop.ModelParams{}, func(polyloop.Delta) {}, send)
	var uc polyloop.UsageCarrier
	if !errors.As(err, &uc) || uc.CallUsage().CostUSD != nil || uc.CallUsage().Tokens() != 0 {
		t.Fatalf("err = %v; want a UsageCarrier with no tokens and an unknown cost", err)
	}
	// A failure before any delta or usage carries nothing, as for Complete.
	_, err = streamCaller().Stream(context.Background(), polyloop.ModelParams{}, func(polyloop.Delta) {}, scriptedSend(attemptScript{err: errReset()}))
	if errors.As(err, &uc) {
		t.Errorf("err = %v; a call that consumed nothing known must not carry usage", err)
	}
}

// What retried attempts reported is added to the reply's usage; an attempt
// billed for an unknown amount makes the call's cost unknown.
func TestStreamUsageOfRetriedAttempts(t *testing.T) {
	t.Parallel()
	ok := polyloop.ModelReply{Text: "ok", Usage: polyloop.Usage{InputTokens: 10, OutputTokens: 5, CostUSD: cost(0.25)}}
	for _, tc := range []struct {
		name  string
		first attemptScript
		want  polyloop.Usage
	}{
		{"reported", attemptScript{texts: []string{"a"}, usage: &polyloop.Usage{InputTokens: 10, OutputTokens: 1, CostUSD: cost(0.125)}, err: errReset()},
			polyloop.Usage{InputTokens: 20, OutputTokens: 6, CostUSD: cost(0.375)}},
		{"reported, cost unknown", attemptScript{texts: []string{"a"}, usage: &polyloop.Usage{InputTokens: 10}, err: errReset()},
			polyloop.Usage{InputTokens: 20, OutputTokens: 5}},
		{"billed, not reported", attemptScript{texts: []string{"a"}, err: errReset()},
			polyloop.Usage{InputTokens: 10, OutputTokens: 5, TokensUnknown: true}},
		{"nothing consumed", attemptScript{err: errReset()}, ok.Usage},
	} {
		reply, err := streamCaller().Stream(context.Background(), polyloop.ModelParams{Retries: 1}, func(polyloop.Delta) {},
			scriptedSend(tc.first, attemptScript{reply: ok}))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !reflect.DeepEqual(reply.Usage, tc.want) {
			t.Errorf("%s: usage %s, want %s", tc.name, usageText(reply.Usage), usageText(tc.want))
		}
	}
}

func usageText(u polyloop.Usage) string {
	c := "unknown"
	if u.CostUSD != nil {
		c = fmt.Sprint(*u.CostUSD)
	}
	return fmt.Sprintf("{in %d out %d cost %s tokens unknown %t}", u.InputTokens, u.OutputTokens, c, u.TokensUnknown)
}

// A cancelled stream reports the cancellation; the client announces nothing
// (the library does).
func TestStreamCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	var got deltaLog
	send := func(ctx context.Context, x *Exchange) (polyloop.ModelReply, error) {
		x.Emit(polyloop.Delta{Text: "a"})
		cancel()
		return polyloop.ModelReply{}, errReset()
	}
	_, err := streamCaller().Stream(ctx, polyloop.ModelParams{Retries: 3}, got.add, send)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v; want a cancellation", err)
	}
	if want := (deltaLog{"1:a"}); !reflect.DeepEqual(got, want) {
		t.Errorf("deltas %q, want %q", got, want)
	}
}

// Complete's attempts deliver no deltas: Emit is a no-op there.
func TestCallIgnoresDeltas(t *testing.T) {
	t.Parallel()
	reply, err := streamCaller().Call(context.Background(), polyloop.ModelParams{}, scriptedSend(attemptScript{texts: []string{"a"}, reply: polyloop.ModelReply{Text: "a"}}))
	if err != nil || reply.Text != "a" {
		t.Fatalf("%+v, %v", reply, err)
	}
}

// failingBody gives data, then a connection reset.
type failingBody struct{ data string }

func (b *failingBody) Read(p []byte) (int, error) {
	if b.data == "" {
		return 0, syscall.ECONNRESET
	}
	n := copy(p, b.data)
	b.data = b.data[n:]
	return n, nil
}

func (b *failingBody) Close() error { return nil }

// A streamed success is handed to the SDK as it arrives, not buffered: the
// middleware returns it although its body breaks later, and the break is a
// connection failure of the attempt once read.
func TestMiddlewareStreamsASuccess(t *testing.T) {
	t.Parallel()
	c := streamCaller()
	x := c.exchange(context.Background(), 1, func(polyloop.Delta) {})
	req, _ := http.NewRequest(http.MethodPost, "http://model.test/v1/x", nil)
	res, err := x.Middleware(req, func(*http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Header: http.Header{}, Body: &failingBody{data: "data: {}\n\n"}}, nil
	})
	if err != nil {
		t.Fatalf("the middleware read the stream before handing it over: %v", err)
	}
	b, readErr := io.ReadAll(res.Body)
	if string(b) != "data: {}\n\n" || readErr == nil {
		t.Fatalf("read %q, %v; want the data, then the reset", b, readErr)
	}
	var connErr *ConnectionError[testPkg]
	if err := c.Classify(x, readErr); !errors.As(err, &connErr) || !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("classified as %v (%T); want a *ConnectionError caused by the reset", err, err)
	}
}

// An error status of a streamed request is read whole, as for Complete.
func TestMiddlewareReadsAStreamedErrorStatus(t *testing.T) {
	t.Parallel()
	c := streamCaller()
	c.Wire.ParseError = func(body []byte) (ErrorFields, bool) { return ErrorFields{Message: string(body)}, true }
	x := c.exchange(context.Background(), 1, func(polyloop.Delta) {})
	req, _ := http.NewRequest(http.MethodPost, "http://model.test/v1/x", nil)
	h := http.Header{}
	h.Set("Retry-After", "2")
	_, _ = x.Middleware(req, func(*http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 429, Header: h, Body: io.NopCloser(strings.NewReader("slow down"))}, nil
	})
	var apiErr *APIError[testPkg]
	if err := c.Classify(x, errors.New("sdk")); !errors.As(err, &apiErr) || apiErr.Message != "slow down" || apiErr.RetryAfter.Seconds() != 2 {
		t.Errorf("classified as %v; want a 429 *APIError with the body's message and Retry-After", err)
	}
}

// An error event in a stream is an *APIError with the status the provider
// documents for its type, the Retry-After of the response, and InStream
// set; the retry policy treats it as that status.
func TestEventError(t *testing.T) {
	t.Parallel()
	c := streamCaller()
	c.Wire.ParseError = func(body []byte) (ErrorFields, bool) {
		return ErrorFields{Type: string(body), Message: "busy"}, true
	}
	c.Wire.EventStatus = func(f ErrorFields) int {
		if f.Type == "rate_limit_error" {
			return 429
		}
		return 0
	}
	x := c.exchange(context.Background(), 1, func(polyloop.Delta) {})
	x.status, x.header = 200, http.Header{"Retry-After-Ms": {"20"}}
	err := c.EventError(x, []byte("rate_limit_error"))
	var apiErr *APIError[testPkg]
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 429 || !apiErr.InStream || apiErr.RetryAfter.Milliseconds() != 20 || apiErr.Type != "rate_limit_error" {
		t.Fatalf("err = %#v; want an in-stream 429", err)
	}
	if !apiErr.Retryable() {
		t.Error("an in-stream rate limit is not retried")
	}
	if got := apiErr.Error(); !strings.Contains(got, "in the stream") || !strings.Contains(got, "429") {
		t.Errorf("Error() = %q; want it to say the error came in the stream, as a 429", got)
	}
	if f := apiErr.DiagFields(); f["in_stream"] != "true" || f["http_status"] != "429" {
		t.Errorf("diag fields %v", f)
	}
	unknown := c.EventError(x, []byte("odd_error"))
	if !errors.As(unknown, &apiErr) || apiErr.Retryable() {
		t.Errorf("an error event of a type without a documented status is retried: %v", unknown)
	}
}

// A stream that ends before the reply is complete is a connection failure
// (retried), unless the attempt saw one of its own first.
func TestIncompleteStream(t *testing.T) {
	t.Parallel()
	c := streamCaller()
	x := c.exchange(context.Background(), 1, func(polyloop.Delta) {})
	err := c.Incomplete(x)
	var connErr *ConnectionError[testPkg]
	if !errors.As(err, &connErr) || !errors.Is(err, ErrIncompleteStream) {
		t.Errorf("err = %v; want a *ConnectionError caused by ErrIncompleteStream", err)
	}
}
