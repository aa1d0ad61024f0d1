package providertest

import (
	"context"
	"encoding/json"
	"math"
	"reflect"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/provider"
)

// ReplyCase is a success response (Fixture) the client must turn into Want,
// at the cost Cost (nil: unknown). Want's Attempts and RequestID are set by
// CheckReplies.
type ReplyCase struct {
	Fixture string
	Want    polyloop.ModelReply
	Cost    *float64
}

// CheckReplies runs the cases, each against a fresh server that names the
// request "req_" + fixture, with call id m1.1 and two retries allowed.
func CheckReplies[P provider.Package](t *testing.T, h Harness[P], cases []ReplyCase) {
	for _, tc := range cases {
		t.Run(tc.Fixture, func(t *testing.T) {
			t.Parallel()
			srv := h.Serve(t, Response{Status: 200, Fixture: tc.Fixture, Header: map[string]string{h.RequestIDHeader: "req_" + tc.Fixture}})
			req := h.Request(polyloop.ModelParams{Retries: 2})
			req.CallID = "m1.1"
			got, err := h.Client(t, srv.URL()).Complete(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			tc.Want.Attempts, tc.Want.RequestID = 1, "req_"+tc.Fixture
			gotCost := got.Usage.CostUSD
			got.Usage.CostUSD = nil
			if !reflect.DeepEqual(got, tc.Want) {
				t.Errorf("reply\n got %+v\nwant %+v", got, tc.Want)
			}
			switch {
			case tc.Cost == nil && gotCost != nil:
				t.Errorf("cost = %v, want unknown (nil)", *gotCost)
			case tc.Cost != nil && (gotCost == nil || math.Abs(*gotCost-*tc.Cost) > 1e-12):
				t.Errorf("cost = %v, want %v", gotCost, *tc.Cost)
			}
		})
	}
}

// CheckArgsSurviveTheLog checks that the tool-call arguments args makes of
// each input are the bytes a record keeps after encoding and decoding, so a
// resumed run sends the same request as the uninterrupted one.
func CheckArgsSurviveTheLog(t *testing.T, args func(string) json.RawMessage, inputs ...string) {
	t.Helper()
	for _, s := range inputs {
		a := args(s)
		enc, err := json.Marshal(polyloop.ToolCall{Name: "t", Args: a})
		if err != nil {
			t.Fatal(err)
		}
		var back polyloop.ToolCall
		if err := json.Unmarshal(enc, &back); err != nil {
			t.Fatal(err)
		}
		if string(back.Args) != string(a) {
			t.Errorf("arguments %q: %s in the reply, %s after the log", s, a, back.Args)
		}
	}
}
