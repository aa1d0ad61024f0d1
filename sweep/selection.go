package sweep

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// ErrUnknownTasks marks a Selection that names task ids its source does
// not hold.
var ErrUnknownTasks = errors.New("sweep: the selection names tasks the task file does not hold")

// Selection chooses the tasks of a sweep from its source, as a
// researcher runs part of a dataset: the tasks named (IDs; all when
// empty), in the source's order or shuffled, then the first Limit of them
// (all when 0). A task's run ids stay what they are whatever selects it
// (they name the task by its id), so a sweep run again with the same
// selection finds its runs, and a wider selection adds only the runs of
// the tasks it adds.
type Selection struct {
	IDs []string
	// Shuffle orders the tasks by the SHA-256 of Seed and their id: the
	// same seed gives the same order on every machine and every version,
	// and adding tasks to the file does not reorder the others (so
	// --shuffle --limit N picks the same N tasks, or lets a new one in).
	Shuffle bool
	Seed    int64
	Limit   int
}

// IsZero reports whether the selection selects every task in order.
func (s Selection) IsZero() bool { return len(s.IDs) == 0 && !s.Shuffle && s.Limit == 0 }

// String describes the selection: "tasks a,b; shuffled (seed 7); the
// first 10".
func (s Selection) String() string {
	var parts []string
	if len(s.IDs) > 0 {
		parts = append(parts, "tasks "+strings.Join(s.IDs, ","))
	}
	if s.Shuffle {
		parts = append(parts, "shuffled (seed "+strconv.FormatInt(s.Seed, 10)+")")
	}
	if s.Limit > 0 {
		parts = append(parts, "the first "+strconv.Itoa(s.Limit))
	}
	return strings.Join(parts, "; ")
}

// Select returns the tasks of src that sel selects, as a TaskSource. Its
// Check checks src, then reads the task ids (every id is held in memory,
// not the tasks) and fails with ErrUnknownTasks for an id src does not
// hold; its Tasks stream src (a shuffled selection reads src once per
// selectWindow tasks, holding at most that many).
func Select(src TaskSource, sel Selection) TaskSource {
	if sel.IsZero() {
		return src
	}
	return &selected{src: src, sel: sel}
}

// selectWindow is how many tasks a shuffled selection holds at once.
var selectWindow = 1024

type selected struct {
	src TaskSource
	sel Selection

	mu    sync.Mutex
	order []string // the selected ids, in order; nil until Check
}

func (s *selected) Describe() string { return s.src.Describe() + " (" + s.sel.String() + ")" }

// Check implements TaskSource: n counts the selected tasks.
func (s *selected) Check(ctx context.Context) (int, error) {
	if _, err := s.src.Check(ctx); err != nil {
		return 0, err
	}
	order, err := s.choose(ctx)
	if err != nil {
		return 0, err
	}
	s.mu.Lock()
	s.order = order
	s.mu.Unlock()
	return len(order), nil
}

// choose reads the source's ids and selects them.
func (s *selected) choose(ctx context.Context) ([]string, error) {
	var ids []string
	if err := s.src.Tasks(ctx, func(t Task) error { ids = append(ids, t.ID); return nil }); err != nil {
		return nil, err
	}
	if len(s.sel.IDs) > 0 {
		have := make(map[string]bool, len(ids))
		for _, id := range ids {
			have[id] = true
		}
		named := make(map[string]bool, len(s.sel.IDs))
		var unknown []string
		for _, id := range s.sel.IDs {
			named[id] = true
			if !have[id] {
				unknown = append(unknown, strconv.Quote(id))
			}
		}
		if len(unknown) > 0 {
			return nil, fmt.Errorf("%w (%s): %s", ErrUnknownTasks, s.src.Describe(), strings.Join(unknown, ", "))
		}
		ids = slices.DeleteFunc(ids, func(id string) bool { return !named[id] })
	}
	if s.sel.Shuffle {
		key := func(id string) [32]byte {
			return sha256.Sum256([]byte(strconv.FormatInt(s.sel.Seed, 10) + "\x00" + id))
		}
		keys := make(map[string][32]byte, len(ids))
		for _, id := range ids {
			keys[id] = key(id)
		}
		slices.SortFunc(ids, func(a, b string) int {
			ka, kb := keys[a], keys[b]
			return strings.Compare(string(ka[:]), string(kb[:]))
		})
	}
	if s.sel.Limit > 0 && len(ids) > s.sel.Limit {
		ids = ids[:s.sel.Limit]
	}
	return ids, nil
}

// Tasks implements TaskSource: the selected tasks, in the selection's
// order.
func (s *selected) Tasks(ctx context.Context, yield func(Task) error) error {
	s.mu.Lock()
	order := s.order
	s.mu.Unlock()
	if order == nil {
		var err error
		if order, err = s.choose(ctx); err != nil {
			return err
		}
	}
	if !s.sel.Shuffle {
		return s.inFileOrder(ctx, order, yield)
	}
	for start := 0; start < len(order); start += selectWindow {
		if err := s.window(ctx, order[start:min(start+selectWindow, len(order))], yield); err != nil {
			return err
		}
	}
	return nil
}

// inFileOrder streams the source and yields the tasks of order (which is
// in the source's order).
func (s *selected) inFileOrder(ctx context.Context, order []string, yield func(Task) error) error {
	want := make(map[string]bool, len(order))
	for _, id := range order {
		want[id] = true
	}
	left := len(order)
	err := s.src.Tasks(ctx, func(t Task) error {
		if !want[t.ID] {
			return nil
		}
		if err := yield(t); err != nil {
			return err
		}
		if left--; left == 0 {
			return errSelectionDone
		}
		return nil
	})
	if errors.Is(err, errSelectionDone) {
		return nil
	}
	return err
}

var errSelectionDone = errors.New("sweep: every selected task was read")

// window reads the tasks of ids in one pass over the source and yields
// them in the order of ids.
func (s *selected) window(ctx context.Context, ids []string, yield func(Task) error) error {
	at := make(map[string]int, len(ids))
	for i, id := range ids {
		at[id] = i
	}
	tasks := make([]Task, len(ids))
	if err := s.src.Tasks(ctx, func(t Task) error {
		if i, ok := at[t.ID]; ok {
			tasks[i] = t
		}
		return nil
	}); err != nil {
		return err
	}
	for _, t := range tasks {
		if err := yield(t); err != nil {
			return err
		}
	}
	return nil
}
