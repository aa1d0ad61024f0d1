package main

import (
	"testing"

	"github.com/polyloop/polyloop"
)

// show prints a call's usage as a lower bound when an attempt may have been
// billed for more than it reported, and says why a failed call has one.
func TestUsageText(t *testing.T) {
	cost, tiny := 0.5, 0.00000014
	for _, tc := range []struct {
		u            polyloop.Usage
		usage, cause string
	}{
		{polyloop.Usage{InputTokens: 10, OutputTokens: 5, CostUSD: &cost}, "10 in / 5 out tokens, $0.500000", "the reply received"},
		{polyloop.Usage{InputTokens: 10, OutputTokens: 5, CostUSD: &tiny}, "10 in / 5 out tokens, $0.00000014", "the reply received"},
		{polyloop.Usage{InputTokens: 10, OutputTokens: 5}, "10 in / 5 out tokens, cost unknown", "the reply received"},
		{polyloop.Usage{InputTokens: 10, OutputTokens: 5, TokensUnknown: true}, "≥ 10 in / 5 out tokens, cost unknown", "the request was sent: it may have been billed"},
		{polyloop.Usage{TokensUnknown: true}, "usage unknown", "the request was sent: it may have been billed"},
	} {
		if got := usageText(tc.u); got != tc.usage {
			t.Errorf("usageText(%+v) = %q, want %q", tc.u, got, tc.usage)
		}
		if got := billedText(tc.u); got != tc.cause {
			t.Errorf("billedText(%+v) = %q, want %q", tc.u, got, tc.cause)
		}
	}
}
