package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/polyloop/polyloop"
)

// readInput reads what, from the file at path or from stdin when path is
// "-", at most max bytes: a larger input (/dev/zero, a file of gigabytes)
// is refused once max bytes are read, saying so.
func readInput(ctx context.Context, stdin io.Reader, path, what string, max int64) (string, error) {
	r, from := stdin, what+" on standard input"
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return "", fmt.Errorf("reading %s: %w", what, err)
		}
		defer f.Close()
		r, from = f, what+" file "+path
	}
	b, err := polyloop.ReadLimited(ctx, r, max)
	if errors.Is(err, polyloop.ErrInputTooLarge) {
		return "", fmt.Errorf("%s is larger than %d bytes, the most it may be (%w)", from, max, err)
	}
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", from, err)
	}
	return string(b), nil
}
