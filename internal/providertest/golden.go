package providertest

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/polyloop/polyloop/internal/pricing"
)

// PrettyJSON indents a JSON body for golden files.
func PrettyJSON(t testing.TB, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		t.Fatalf("request body is not JSON: %v\n%s", err, b)
	}
	out.WriteByte('\n')
	return out.Bytes()
}

// CheckShippedPrices checks that the price table a client ships has the
// version the client's PriceTableVersion says.
func CheckShippedPrices(t testing.TB, defaultPrices func() (*pricing.Table, error), version string) {
	t.Helper()
	p, err := defaultPrices()
	if err != nil {
		t.Fatal(err)
	}
	if p.Version != version {
		t.Errorf("prices.json has version %q, PriceTableVersion says %q", p.Version, version)
	}
}
