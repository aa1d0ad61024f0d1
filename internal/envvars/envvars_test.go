package envvars_test

import (
	"slices"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/envvars"
)

// TestMergeIsCommandEnv: the sandbox's init (which may not import the
// core) merges variables as polyloop.CommandEnv does (which may import
// nothing of this module but diag): the host layer folded into the
// request's, as the driver sends them.
func TestMergeIsCommandEnv(t *testing.T) {
	image := []string{"PATH=/bin", "HOME=/root"}
	for _, tc := range []struct{ host, req []string }{
		{nil, nil},
		{[]string{"A=1"}, nil},
		{[]string{"A=1", "PATH=/h"}, []string{"A=2", "B=3"}},
		{nil, []string{"HOME=/w", "HOME=/x"}},
	} {
		want := polyloop.CommandEnv(image, tc.host, tc.req)
		got := envvars.Merge(image, append(append([]string(nil), tc.host...), tc.req...))
		if !slices.Equal(got, want) {
			t.Errorf("host %q, request %q: Merge %q, CommandEnv %q", tc.host, tc.req, got, want)
		}
	}
}
