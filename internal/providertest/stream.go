package providertest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/provider"
	"github.com/polyloop/polyloop/polylooptest"
)

// StreamCase describes a client's streamed responses to the shared tests.
// Besides these fixtures, Harness.OK has an SSE, every fixture of
// Harness.Replies has a streamed twin (its name with .sse for .json), and
// so has every response of EndToEnd.Script.
type StreamCase struct {
	// Fields are the top-level fields a streamed request adds to the
	// request Complete sends, as JSON ({"stream": "true"}).
	Fields map[string]string
	// Other streams a reply whose text differs from OK's: a retry's.
	Other string
	// RateLimited streams some deltas, then a rate-limit error event;
	// ServerError streams some deltas, then an error event the client
	// retries (a server error, an overload).
	RateLimited, ServerError string
	// Incomplete streams some deltas, then ends without finishing the
	// reply; Malformed streams some deltas, then an event that is not JSON.
	Incomplete, Malformed string
	// CutAfter is a number of events of OK's SSE that carry some deltas,
	// not all; FirstDelta the number of events up to and including the
	// first delta.
	CutAfter, FirstDelta int
	// EarlyUsage says that the API reports usage before the reply is
	// complete (message_start), so that a stream that fails carries it.
	EarlyUsage bool
}

// sse is the streamed twin of a JSON fixture.
func sse(fixture string) string { return strings.TrimSuffix(fixture, ".json") + ".sse" }

// streaming is c as a streaming client, or a failed test.
func streaming(t testing.TB, c polyloop.ModelClient) polyloop.StreamingModelClient {
	t.Helper()
	s, ok := c.(polyloop.StreamingModelClient)
	if !ok {
		t.Fatalf("%T does not implement polyloop.StreamingModelClient", c)
	}
	return s
}

// streamOf serves script and returns a streaming client of the server.
func (h *Harness[P]) streamOf(t testing.TB, script ...Response) (polyloop.StreamingModelClient, *Server) {
	t.Helper()
	srv := h.Serve(t, script...)
	return streaming(t, h.Client(t, srv.URL())), srv
}

// collect streams req with c and returns the reply, the deltas and the
// error.
func collect(c polyloop.StreamingModelClient, req polyloop.ModelRequest) (polyloop.ModelReply, []polyloop.Delta, error) {
	var deltas []polyloop.Delta
	reply, err := c.Stream(context.Background(), req, func(d polyloop.Delta) { deltas = append(deltas, d) })
	return reply, deltas, err
}

// TestStreamingContract runs the polylooptest StreamingModelClient kit
// against fake servers: OK's stream, a stream cut after CutAfter events and
// then OK, a stream that fails with ServerError's error event, and one that
// stalls after its first delta. It must not run in parallel (the kit's leak
// checks).
func TestStreamingContract[P provider.Package](t *testing.T, h Harness[P]) {
	serving := func(script ...Response) func(t testing.TB) polyloop.StreamingModelClient {
		return func(t testing.TB) polyloop.StreamingModelClient {
			return streaming(t, h.contractClient(t, h.Serve(t, script...).URL()))
		}
	}
	s := h.Stream
	polylooptest.TestStreamingModelClient(t, polylooptest.StreamingClientHarness{
		New:         serving(h.OK),
		NewRetried:  serving(Response{SSE: h.OK.SSE, CutAfter: s.CutAfter}, h.OK),
		NewBroken:   serving(Response{SSE: s.ServerError}),
		BrokenUsage: s.EarlyUsage,
		NewHanging:  serving(Response{SSE: h.OK.SSE, StallAfter: s.FirstDelta}),
	})
}

// CheckStreamedReplies checks that the streamed twin of each reply case
// gives the case's reply — the one Complete gives for the JSON fixture —
// at its cost, in one attempt, with deltas that make the reply.
func CheckStreamedReplies[P provider.Package](t *testing.T, h Harness[P], cases []ReplyCase) {
	for _, tc := range cases {
		t.Run(sse(tc.Fixture), func(t *testing.T) {
			t.Parallel()
			header := map[string]string{h.RequestIDHeader: "req_" + tc.Fixture}
			req := h.Request(polyloop.ModelParams{Retries: 2})
			req.CallID = "m1.1"
			c, _ := h.streamOf(t, Response{Status: 200, SSE: sse(tc.Fixture), Header: header})
			got, deltas, err := collect(c, req)
			if err != nil {
				t.Fatal(err)
			}
			completed, err := h.Client(t, h.Serve(t, Response{Status: 200, Fixture: tc.Fixture, Header: header}).URL()).Complete(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, completed) {
				t.Errorf("streamed reply\n got %s\nComplete gives %s", jsonText(got), jsonText(completed))
			}
			if err := polylooptest.CheckDeltas(deltas, got); err != nil {
				t.Errorf("deltas %s: %v", jsonText(deltas), err)
			}
			for _, d := range deltas {
				if d.Superseded || d.Attempt != 1 {
					t.Errorf("a clean stream delivered %+v", d)
				}
			}
		})
	}
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// CheckStreamRequest checks that Stream sends the request Complete sends,
// field for field and byte for byte, but for the fields a stream adds.
func CheckStreamRequest[P provider.Package](t *testing.T, h Harness[P]) {
	allow := false
	req := polyloop.ModelRequest{Step: 2, CallID: "m2.1",
		Messages: []polyloop.Message{{Role: polyloop.RoleSystem, Content: "You answer weather questions."}, {Role: polyloop.RoleUser, Content: "Weather in Paris?"}},
		Tools:    h.WeatherAgent("get_weather").Tools,
		Params:   polyloop.ModelParams{Model: h.Model, MaxOutputTokens: 64, Stop: []string{"\n\n"}, ParallelToolCalls: &allow}}
	c, srv := h.streamOf(t, h.OK)
	if _, err := c.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if _, _, err := collect(c, req); err != nil {
		t.Fatal(err)
	}
	completed, streamed := fields(t, srv.Request(0).Body), fields(t, srv.Request(1).Body)
	for k, v := range h.Stream.Fields {
		if got, ok := streamed[k]; !ok || !jsonEqual(got, []byte(v)) {
			t.Errorf("the streamed request has %s = %s, want %s", k, got, v)
		}
		if _, ok := completed[k]; ok {
			t.Errorf("Complete's request has %s, a field of streams", k)
		}
		delete(streamed, k)
	}
	for k, v := range completed {
		if !bytes.Equal(streamed[k], v) {
			t.Errorf("field %s: streamed %s, Complete sends %s", k, streamed[k], v)
		}
		delete(streamed, k)
	}
	for k := range streamed {
		t.Errorf("the streamed request has field %s, which Complete's has not", k)
	}
}

func fields(t *testing.T, body []byte) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("request body: %v\n%s", err, body)
	}
	return m
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

// CheckStreamFailures checks how streams fail: a stream that ends early is
// a retried *ConnectionError, a malformed event a *ResponseError that is not
// retried, an error event an in-stream *APIError, and the error statuses of
// h.APIErrors the errors Complete gives.
func CheckStreamFailures[P provider.Package](t *testing.T, h Harness[P]) {
	req := h.Request(polyloop.ModelParams{RetryBackoffMS: 1})
	t.Run("incomplete stream", func(t *testing.T) {
		t.Parallel()
		c, srv := h.streamOf(t, Response{SSE: h.Stream.Incomplete}, h.OK)
		req := req
		req.Params.Retries = 1
		reply, deltas, err := collect(c, req)
		if err != nil || reply.Attempts != 2 || srv.Count() != 2 {
			t.Fatalf("reply %+v, err %v after %d requests; want the retry's reply", reply, err, srv.Count())
		}
		if err := polylooptest.CheckDeltas(deltas, reply); err != nil {
			t.Error(err)
		}
		c, _ = h.streamOf(t, Response{SSE: h.Stream.Incomplete})
		_, _, err = collect(c, h.Request(polyloop.ModelParams{}))
		var connErr *provider.ConnectionError[P]
		if !errors.As(err, &connErr) || !errors.Is(err, provider.ErrIncompleteStream) {
			t.Errorf("err = %v; want a *ConnectionError caused by ErrIncompleteStream", err)
		}
		checkBilled(t, err, h.Stream.EarlyUsage)
	})
	t.Run("malformed event", func(t *testing.T) {
		t.Parallel()
		c, srv := h.streamOf(t, Response{SSE: h.Stream.Malformed, Header: map[string]string{h.RequestIDHeader: "req_bad"}})
		req := req
		req.Params.Retries = 2
		_, _, err := collect(c, req)
		var respErr *provider.ResponseError[P]
		if !errors.As(err, &respErr) || respErr.RequestID != "req_bad" || srv.Count() != 1 {
			t.Errorf("err = %v after %d requests; want a *ResponseError of request req_bad, not retried", err, srv.Count())
		}
	})
	t.Run("error event", func(t *testing.T) {
		t.Parallel()
		c, _ := h.streamOf(t, Response{SSE: h.Stream.RateLimited, Header: map[string]string{"retry-after-ms": "7"}})
		_, _, err := collect(c, h.Request(polyloop.ModelParams{}))
		var apiErr *provider.APIError[P]
		if !errors.As(err, &apiErr) || !apiErr.InStream || apiErr.StatusCode != 429 || apiErr.RetryAfter.Milliseconds() != 7 || apiErr.Attempts != 1 {
			t.Errorf("err = %#v; want an in-stream 429 *APIError with the response's Retry-After", err)
		}
		checkBilled(t, err, h.Stream.EarlyUsage)
	})
	for _, tc := range h.APIErrors {
		t.Run("status "+tc.Name, func(t *testing.T) {
			t.Parallel()
			c, srv := h.streamOf(t, tc.Resp)
			req := req
			req.Params.Retries = tc.Retries
			_, deltas, err := collect(c, req)
			var apiErr *provider.APIError[P]
			if !errors.As(err, &apiErr) || *apiErr != tc.Want || srv.Count() != tc.Requests || len(deltas) != 0 {
				t.Errorf("err = %v after %d requests, %d deltas; want %+v after %d, none", err, srv.Count(), len(deltas), tc.Want, tc.Requests)
			}
		})
	}
}

// checkBilled checks that the error of a stream that failed after its
// deltas carries what the call consumed: the usage the stream reported
// when the API reports it early, else an unknown cost.
func checkBilled(t *testing.T, err error, early bool) {
	t.Helper()
	var uc polyloop.UsageCarrier
	switch {
	case !errors.As(err, &uc):
		t.Errorf("err = %v; a stream that delivered deltas was billed: its error must carry usage", err)
	case early && uc.CallUsage().InputTokens == 0:
		t.Errorf("usage %+v; want the input tokens the stream reported", uc.CallUsage())
	case !early && (uc.CallUsage().CostUSD != nil || uc.CallUsage().Tokens() != 0):
		t.Errorf("usage %+v; nothing was reported, so the cost is unknown", uc.CallUsage())
	}
}
