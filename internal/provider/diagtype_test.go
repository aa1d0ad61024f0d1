package provider

import (
	"errors"
	"testing"

	"github.com/polyloop/polyloop/diag"
)

// Stored diagnostics name the client's error type, not the generic
// instantiation.
func TestDiagTypeNamesTheClient(t *testing.T) {
	for err, want := range map[error]string{
		&APIError[testPkg]{StatusCode: 429}:             "*provider.APIError",
		&ConnectionError[testPkg]{Err: errors.New("x")}: "*provider.ConnectionError",
		&ResponseError[testPkg]{Err: errors.New("bad")}: "*provider.ResponseError",
	} {
		if got := diag.From(err).Type; got != want {
			t.Errorf("diag type %q, want %q", got, want)
		}
	}
}
