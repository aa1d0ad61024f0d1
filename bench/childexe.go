package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// The children of Run start from a fresh copy of this executable, written to
// Run's temporary directory. On Linux the resident pages a process maps from
// its executable depend on how the file's pages came into the page cache —
// with the large folios of recent kernels, the same `polyloop` binary has an
// idle peak RSS of 38 MB when it was just written or read from disk by exec
// alone, 43 MB as `go build` leaves it, 66 MB after a sequential read of the
// whole file — so the children's peak RSS and start-up would otherwise vary
// with the history of the file rather than with the program. A fresh copy
// is in the state of a binary just copied into place, or loaded from disk by
// exec alone.

type childExeKey struct{}

// withChildExe makes startChild run path instead of this executable.
func withChildExe(ctx context.Context, path string) context.Context {
	return context.WithValue(ctx, childExeKey{}, path)
}

// childExe is the program startChild runs: the copy set by withChildExe, or
// this executable.
func childExe(ctx context.Context) (string, error) {
	if p, ok := ctx.Value(childExeKey{}).(string); ok {
		return p, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("bench: finding this executable to start a child: %w", err)
	}
	return exe, nil
}

// copyExecutable copies this executable into dir/exe, under its own name,
// and returns the copy's path.
func copyExecutable(dir string) (path string, err error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("bench: finding this executable: %w", err)
	}
	src, err := os.Open(exe)
	if err != nil {
		return "", fmt.Errorf("bench: copying this executable: %w", err)
	}
	defer src.Close()
	// The copy keeps the executable's name, which a program may dispatch on
	// (a test binary serving as several commands does).
	if err := os.Mkdir(filepath.Join(dir, "exe"), 0o755); err != nil {
		return "", fmt.Errorf("bench: copying this executable: %w", err)
	}
	path = filepath.Join(dir, "exe", filepath.Base(exe))
	dst, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return "", fmt.Errorf("bench: copying this executable: %w", err)
	}
	_, err = io.Copy(dst, src)
	if err = errors.Join(err, dst.Close()); err != nil {
		return "", fmt.Errorf("bench: copying this executable: %w", err)
	}
	return path, nil
}
