package openaimodel

import (
	"testing"

	"github.com/polyloop/polyloop/internal/providertest"
)

// TestContract runs the polylooptest ModelClient contract kit. It is not
// parallel: the kit's leak checks count the process's goroutines.
func TestContract(t *testing.T) {
	providertest.TestContract(t, harness, map[string]response{
		"http_400":       {Status: 400, Fixture: "error_400.json"},
		"http_401":       {Status: 401, Fixture: "error_401.json"},
		"http_429":       {Status: 429, Fixture: "error_429.json"},
		"http_500":       {Status: 500, Fixture: "error_500.json"},
		"http_502_html":  {Status: 502, Fixture: "error_502.html"},
		"malformed_body": {Status: 200, Fixture: "malformed.json"},
		"no_choices":     {Status: 200, Fixture: "empty_object.json"},
	})
}
