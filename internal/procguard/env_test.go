package procguard

import (
	"slices"
	"testing"
)

// TestSplitShowsNoCredential: the kernel-visible environment keeps the
// runtime's and the terminal's variables and nothing else.
func TestSplitShowsNoCredential(t *testing.T) {
	visible, hidden := split([]string{"PATH=/bin", "OPENAI_API_KEY=sk-x", "POLYLOOP_STORE=postgres://u:p@h/d", "GODEBUG=x=1",
		"LC_ALL=C", "PGPASSWORD=p", "AWS_SECRET_ACCESS_KEY=k", "HOME=/root", "SOMETHING_ELSE=1"})
	if want := []string{"PATH=/bin", "GODEBUG=x=1", "LC_ALL=C", "HOME=/root"}; !slices.Equal(visible, want) {
		t.Errorf("visible %q, want %q", visible, want)
	}
	if len(hidden) != 5 {
		t.Errorf("hidden %q", hidden)
	}
}
