package bwrapenv_test

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
)

// TestCopyOutRoot: copying out "/" (what `polyloop env export` does for an
// environment without a working directory) gives the environment's files
// and not the kernel's: /proc and /sys, whose files say size 0 and then
// give more, are left out (before, the copy failed "write too long").
func TestCopyOutRoot(t *testing.T) {
	p, _ := newProvider(t)
	ctx := context.Background()
	en, err := p.Create(ctx, polyloop.EnvSpec{RunID: "copyout-root", Image: "busybox"})
	if err != nil {
		t.Fatal(err)
	}
	defer en.Destroy(ctx)
	if _, err := en.Exec(ctx, polyloop.ExecRequest{Argv: []string{"sh", "-c", "mkdir -p /work && echo hi > /work/f"}}); err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(en.CopyOut(ctx, "/", pw)) }()
	tr := tar.NewReader(pr)
	var names []string
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("CopyOut /: %v", err)
		}
		names = append(names, h.Name)
	}
	all := "\n" + strings.Join(names, "\n") + "\n"
	if !strings.Contains(all, "\nwork/f\n") {
		t.Errorf("CopyOut / lacks work/f: %d entries", len(names))
	}
	for _, virt := range []string{"\nproc/", "\nsys/"} {
		if strings.Contains(all, virt) {
			t.Errorf("CopyOut / holds %s…", strings.TrimSpace(virt))
		}
	}
}
