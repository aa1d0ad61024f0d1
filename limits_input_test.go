package polyloop_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
)

// TestReadLimited: a text within the bound reads whole; /dev/zero stops at
// the bound; a read blocked on a pipe ends when the context does.
func TestReadLimited(t *testing.T) {
	ctx := context.Background()
	b, err := polyloop.ReadLimited(ctx, strings.NewReader("hello"), 5)
	if err != nil || string(b) != "hello" {
		t.Errorf("within the bound: %q, %v", b, err)
	}
	zero, err := os.Open("/dev/zero")
	if err != nil {
		t.Skip(err)
	}
	defer zero.Close()
	if _, err := polyloop.ReadLimited(ctx, zero, 1<<20); !errors.Is(err, polyloop.ErrInputTooLarge) {
		t.Errorf("/dev/zero: %v, want ErrInputTooLarge", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	cctx, cancel := context.WithCancel(ctx)
	time.AfterFunc(50*time.Millisecond, cancel)
	if _, err := polyloop.ReadLimited(cctx, r, 1<<20); !errors.Is(err, context.Canceled) {
		t.Errorf("a pipe nobody writes, cancelled: %v, want context.Canceled", err)
	}
}
