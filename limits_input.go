package polyloop

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// The bounds on what outside input — a file, a template, a request to the
// view — can make the library and its command do (docs/agent-file.md,
// "Bounds on what runs read and start"; the view's in package view's
// documentation; docs/design/0037-hostile-input.md). Each is where a
// hostile or mistaken input would otherwise take unbounded memory, time or
// connections.
const (
	// MaxInputFileBytes bounds a text read into a run's snapshot: the task
	// given as @FILE or on standard input, the agent file's system_file.
	// The snapshot is stored in one record, so a larger text could never be
	// stored: it is refused as soon as the read passes this many bytes,
	// without reading the rest. A line of a sweep's JSONL task file longer
	// than this ends the file's read (a task is at most sweep.MaxTaskBytes;
	// a longer line is skipped up to this bound).
	MaxInputFileBytes = MaxRecordBytes

	// MaxTemplateBytes bounds what a template rendering (the memory view's
	// template) writes, and every string it builds on the way.
	MaxTemplateBytes = 1 << 20
	// MaxTemplateBodies bounds the bodies a rendering runs: range
	// iterations, if and with branches, templates called (about a
	// microsecond each). A view of as many entries would render beyond
	// MaxTemplateBytes anyway.
	MaxTemplateBodies = 100_000
	// MaxTemplateTime bounds a rendering's time: renderings take
	// microseconds; one that takes a second is a loop.
	MaxTemplateTime = time.Second

	// MaxViewPage is the highest page number the view accepts in a list or
	// a run's steps; a larger one is a bad request.
	MaxViewPage = 1 << 20
	// ViewStepsPerPage is the default number of steps on a run's page and
	// a comparison's, so that a page's size does not grow with the run.
	ViewStepsPerPage = 100
	// MaxViewStreams is the default bound on the live streams a view
	// server holds open at once: each reads its run's log every poll.
	MaxViewStreams = 32
)

// ErrInputTooLarge marks an input read past its bound (ReadLimited).
var ErrInputTooLarge = errors.New("polyloop: the input is larger than its bound")

// ReadLimited reads r to its end, or fails with an error wrapping
// ErrInputTooLarge as soon as it has read more than max bytes, without
// reading the rest: /dev/zero or a file of gigabytes costs at most max
// bytes. It checks ctx between reads, and when ctx is done it interrupts a
// read blocked on a pipe or a terminal (an *os.File that can take a
// deadline); it then returns ctx's error.
func ReadLimited(ctx context.Context, r io.Reader, max int64) ([]byte, error) {
	if f, ok := r.(interface{ SetReadDeadline(time.Time) error }); ok {
		stop := context.AfterFunc(ctx, func() { _ = f.SetReadDeadline(time.Unix(1, 0)) })
		defer stop()
	}
	var b bytes.Buffer
	chunk := make([]byte, 64<<10)
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n, err := r.Read(chunk)
		if int64(b.Len()+n) > max {
			return nil, fmt.Errorf("%w: more than %d bytes", ErrInputTooLarge, max)
		}
		b.Write(chunk[:n])
		switch {
		case errors.Is(err, io.EOF):
			return b.Bytes(), nil
		case err != nil && ctx.Err() != nil:
			return nil, ctx.Err()
		case err != nil:
			return nil, err
		}
	}
}
