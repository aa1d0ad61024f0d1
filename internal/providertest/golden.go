package providertest

import (
	"bytes"
	"encoding/json"
	"os"
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

// CheckGolden compares got with the file at path, or rewrites the file when
// update is set (the client's -update flag).
func CheckGolden(t testing.TB, path string, got []byte, update bool) {
	t.Helper()
	if update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("request body differs from %s (go test -update rewrites it):\n%s", path, got)
	}
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
