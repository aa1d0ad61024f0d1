package sweep

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
)

// endless is a reader of one byte for ever (up to stop bytes, then EOF: a
// watchdog for a reader that would not stop), counting what is read;
// after cancelAt bytes it cancels its context.
type endless struct {
	b        byte
	n, stop  int64
	cancelAt int64
	cancel   context.CancelFunc
}

func (e *endless) Read(p []byte) (int, error) {
	if e.n >= e.stop {
		return 0, errors.New("the watchdog's end: the reader did not stop")
	}
	if e.cancel != nil && e.n >= e.cancelAt {
		e.cancel()
	}
	n := min(int64(len(p)), e.stop-e.n)
	for i := range n {
		p[i] = e.b
	}
	e.n += n
	return int(n), nil
}

func noTask(int, Task, *TaskError) error { return nil }

// TestEndlessTaskFilesStop: a JSONL line or a CSV record without an end is
// refused once its bound is read, not read whole (nor for ever).
func TestEndlessTaskFilesStop(t *testing.T) {
	ctx := context.Background()
	zeros := &endless{b: 0, stop: 4 * polyloop.MaxInputFileBytes}
	err := readJSONL(ctx, "zero.jsonl", zeros, noTask)
	var te *TaskError
	if !errors.As(err, &te) || !strings.Contains(te.Msg, "longer than") || zeros.n > polyloop.MaxInputFileBytes+1<<20 {
		t.Errorf("JSONL of zeros: %v after %d bytes", err, zeros.n)
	}
	for _, head := range []bool{true, false} {
		as := &endless{b: 'a', stop: 4 * MaxTaskBytes}
		var r interface{ Read([]byte) (int, error) } = as
		if !head {
			r = &prefixed{prefix: "id,input\n1,", r: as}
		}
		err := readCSV(ctx, "a.csv", r, noTask)
		if !errors.As(err, &te) || !strings.Contains(te.Msg, "larger than") || as.n > MaxTaskBytes+2*csvSlack {
			t.Errorf("CSV cell without end (in the header: %v): %v after %d bytes", head, err, as.n)
		}
	}
}

// TestTaskFileReadingCancelled: cancellation ends a read in the middle of a
// line or record.
func TestTaskFileReadingCancelled(t *testing.T) {
	for name, read := range map[string]func(context.Context, string, interface{ Read([]byte) (int, error) }, func(int, Task, *TaskError) error) error{
		"jsonl": func(ctx context.Context, n string, r interface{ Read([]byte) (int, error) }, f func(int, Task, *TaskError) error) error {
			return readJSONL(ctx, n, r, f)
		},
		"csv": func(ctx context.Context, n string, r interface{ Read([]byte) (int, error) }, f func(int, Task, *TaskError) error) error {
			return readCSV(ctx, n, r, f)
		},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		r := &endless{b: 'a', stop: 2 * MaxTaskBytes, cancelAt: 1 << 20, cancel: cancel}
		err := read(ctx, name, r, noTask)
		cancel()
		if !errors.Is(err, context.Canceled) || r.n > 2<<20 {
			t.Errorf("%s: %v after %d bytes, want context.Canceled soon after 1 MiB", name, err, r.n)
		}
	}
}

type prefixed struct {
	prefix string
	r      interface{ Read([]byte) (int, error) }
}

func (p *prefixed) Read(b []byte) (int, error) {
	if p.prefix != "" {
		n := copy(b, p.prefix)
		p.prefix = p.prefix[n:]
		return n, nil
	}
	return p.r.Read(b)
}
