package sweep

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// A sample's cost or tokens none of which is known are null in JSON, a
// known part (a lower bound) and a known zero are numbers.
func TestSampleJSONUnknownIsNull(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		s    Sample
		want []string
	}{
		{Sample{CostUnknown: true, TokensUnknown: true}, []string{`"tokens":null`, `"cost_usd":null`, `"cost_unknown":true`}},
		{Sample{Tokens: 12, CostUnknown: true}, []string{`"tokens":12`, `"cost_usd":null`}},
		{Sample{Tokens: 12, CostUSD: 0.5, CostUnknown: true}, []string{`"cost_usd":0.5`, `"cost_unknown":true`}},
		{Sample{}, []string{`"tokens":0`, `"cost_usd":0`}},
	} {
		b, err := json.Marshal(c.s)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range c.want {
			if !strings.Contains(string(b), w) {
				t.Errorf("%+v: %s; want %s", c.s, b, w)
			}
		}
		if strings.Count(string(b), `"cost_usd"`) != 1 || strings.Count(string(b), `"tokens"`) != 1 {
			t.Errorf("%s: one cost_usd and one tokens", b)
		}
		var back Sample
		if err := json.Unmarshal(b, &back); err != nil || back.CostUnknown != c.s.CostUnknown || back.CostUSD != c.s.CostUSD || back.Tokens != c.s.Tokens {
			t.Errorf("%s read back as %+v (%v)", b, back, err)
		}
	}
}

// cutText keeps a long error's start and end, on one line, within n
// bytes, at character boundaries.
func TestCutText(t *testing.T) {
	t.Parallel()
	long := "scorer s: exited\n" + strings.Repeat("é", 300) + "\nAssertionError: 5 != 4"
	got := cutText(long, 100)
	if len(got) > 100 || !strings.HasPrefix(got, "scorer s: exited ") || !strings.HasSuffix(got, "AssertionError: 5 != 4") ||
		!strings.Contains(got, " … ") || !utf8.ValidString(got) || strings.Contains(got, "\n") {
		t.Errorf("cutText: %q (%d bytes)", got, len(got))
	}
	if got := cutText("short\nerror", 100); got != "short error" {
		t.Errorf("cutText of a short error: %q", got)
	}
}
