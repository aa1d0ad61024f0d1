package shellexec_test

import (
	"context"
	"testing"

	"github.com/polyloop/polyloop/shellexec"
)

// BenchmarkExecuteTrue is the cost of one action that does nothing: the
// shell's start and end, its process group (with its sentinel on Linux)
// and the outcome.
func BenchmarkExecuteTrue(b *testing.B) {
	e, err := shellexec.New(shellexec.Options{Dir: b.TempDir(), Shell: "sh"})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for b.Loop() {
		if out, err := e.Execute(ctx, code("true")); err != nil || out.Observation != "" {
			b.Fatalf("%+v, %v", out, err)
		}
	}
}
