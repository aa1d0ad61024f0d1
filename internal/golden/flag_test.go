package golden_test

import (
	"flag"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/polyloop/polyloop/internal/golden"
)

// TestOneRewriteFlagWithDatadriven is a test binary that imports both this
// package and datadriven, which registers -rewrite itself: it would panic at
// start ("flag redefined: rewrite") if both defined the flag. There is one
// -rewrite, datadriven's, and Rewrite reads it.
func TestOneRewriteFlagWithDatadriven(t *testing.T) {
	_ = datadriven.Verbose // the import is what is tested
	f := flag.Lookup("rewrite")
	if f == nil {
		t.Fatal("no -rewrite flag")
	}
	if !strings.Contains(f.Usage, "rewrite the test files") {
		t.Errorf("-rewrite is not datadriven's: usage %q", f.Usage)
	}
	if err := flag.Set("rewrite", "true"); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = flag.Set("rewrite", "false") }()
	if !golden.Rewrite() {
		t.Error("golden.Rewrite() does not read datadriven's -rewrite")
	}
}
