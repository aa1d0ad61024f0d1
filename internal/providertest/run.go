package providertest

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/polyloop/polyloop/internal/provider"
)

// Run runs every shared test against the client h describes. It must not
// run in parallel: the secrets and end-to-end tests set the key's
// environment variable, and the contract kit's leak checks count the
// process's goroutines; those run first, the others then in parallel.
func Run[P provider.Package](t *testing.T, h Harness[P]) {
	if h.New == nil || h.NewDefault == nil || h.PriceTable == "" || len(h.APIErrors) == 0 || len(h.Replies) == 0 || len(h.Unreadable) == 0 || len(h.Failing) == 0 || len(h.Refused) == 0 ||
		len(h.RejectedFields) == 0 || len(h.RateLimitedFields) == 0 || len(h.EndToEnd.Script) == 0 || h.ToolCallBody == nil || h.DeepestDecoded == 0 {
		t.Fatal("providertest: the Harness lacks New, API errors, replies, unreadable responses, failure modes, refused replies, expected fields, an end-to-end run or tool-call bodies")
	}
	if h.OK.SSE == "" || len(h.Stream.Fields) == 0 || h.Stream.Other == "" || h.Stream.RateLimited == "" || h.Stream.ServerError == "" ||
		h.Stream.Incomplete == "" || h.Stream.Malformed == "" || h.Stream.CutAfter <= 0 || h.Stream.FirstDelta <= 0 {
		t.Fatal("providertest: the Harness lacks OK's SSE or a field of Stream")
	}
	t.Run("Contract", func(t *testing.T) { TestContract(t, h, h.Failing) })
	t.Run("StreamingContract", func(t *testing.T) { TestStreamingContract(t, h) })
	t.Run("Secrets", func(t *testing.T) { TestSecrets(t, h, h.Rejected) })
	t.Run("EndToEnd", func(t *testing.T) { TestEndToEnd(t, h, h.EndToEnd) })
	t.Run("EndToEndFailure", func(t *testing.T) { TestEndToEndFailure(t, h, h.Rejected, h.RejectedFields) })
	parallel := map[string]func(t *testing.T){
		"Cancellation":       func(t *testing.T) { TestCancellation(t, h) },
		"ConnectionFailures": func(t *testing.T) { TestConnectionFailures(t, h) },
		"APIErrors":          func(t *testing.T) { CheckAPIErrors(t, h, h.APIErrors) },
		"Replies":            func(t *testing.T) { CheckReplies(t, h, h.Replies) },
		"RetryAfter":         func(t *testing.T) { CheckRetryAfterIsHonoured(t, h, h.RetryAfter150ms) },
		"ZeroRetries":        func(t *testing.T) { CheckZeroRetriesMeansOneAttempt(t, h, h.Overloaded) },
		"DiagFields":         func(t *testing.T) { CheckDiagFields(t, h, h.RateLimited, h.RateLimitedFields) },
		"Unreadable":         func(t *testing.T) { checkUnreadable(t, h) },
		"ShippedPrices":      func(t *testing.T) { checkShippedPricesOnlyProviderAPI(t, h) },
		"ReplyLimits":        func(t *testing.T) { CheckReplyLimits(t, h) },
		"StreamedReplies":    func(t *testing.T) { CheckStreamedReplies(t, h, h.Replies) },
		"StreamRequest":      func(t *testing.T) { CheckStreamRequest(t, h) },
		"StreamFailures":     func(t *testing.T) { CheckStreamFailures(t, h) },
		"StreamEvents":       func(t *testing.T) { TestStreamEvents(t, h) },
		"StreamWrites":       func(t *testing.T) { CheckStreamingWritesNothingMore(t, h) },
		"RefusedKeepUsage":   func(t *testing.T) { CheckRefusedKeepUsage(t, h, h.Refused, "malformed.json") },
		"CostKnown":          func(t *testing.T) { CheckCostKnown(t, h) },
		"SentAttemptsBilled": func(t *testing.T) { CheckSentAttemptsBilled(t, h) },
		"ConnectionReuse":    func(t *testing.T) { CheckConnectionReuse(t, h) },
		"Redirects":          func(t *testing.T) { CheckRedirects(t, h) },
	}
	for name, test := range parallel {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t)
		})
	}
}

func checkUnreadable[P provider.Package](t *testing.T, h Harness[P]) {
	for fixture, cause := range h.Unreadable {
		t.Run(fixture, func(t *testing.T) {
			t.Parallel()
			err := CheckResponseError(t, h, fixture)
			if cause != nil && !errors.Is(err, cause) {
				t.Errorf("err = %v; want one caused by %v", err, cause)
			}
		})
	}
}

// checkShippedPricesOnlyProviderAPI checks that the shipped price table
// prices the calls made to the provider's own API, and only those: a server
// elsewhere under the same wire format charges its own prices, so its costs
// are unknown, and Describe says that no table is in force.
func checkShippedPricesOnlyProviderAPI[P provider.Package](t *testing.T, h Harness[P]) {
	srv := h.Serve(t, h.OK)
	for _, tc := range []struct {
		name      string
		opts      Options
		wantTable string
		wantCost  bool
	}{
		// The default base URL, routed to the fake server.
		{"provider's API", Options{HTTPClient: srv.Client()}, h.PriceTable, true},
		{"another server", Options{BaseURL: srv.URL()}, provider.NoPriceTable, false},
	} {
		tc.opts.APIKey = "test-key"
		c, err := h.NewDefault(tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		reply, err := h.Call(t, c, 0)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if (reply.Usage.CostUSD != nil) != tc.wantCost {
			t.Errorf("%s: cost %v, want known=%v", tc.name, reply.Usage.CostUSD, tc.wantCost)
		}
		var cfg struct {
			PriceTable string `json:"price_table"`
		}
		if err := json.Unmarshal(c.Describe().Config, &cfg); err != nil {
			t.Fatal(err)
		}
		if cfg.PriceTable != tc.wantTable {
			t.Errorf("%s: Describe price_table %q, want %q", tc.name, cfg.PriceTable, tc.wantTable)
		}
	}
}
