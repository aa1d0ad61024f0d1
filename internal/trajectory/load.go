package trajectory

import (
	"context"
	"fmt"

	"github.com/polyloop/polyloop"
)

// Store is what Load reads: a run log and the listing of a run's children.
type Store interface {
	polyloop.Store
	polyloop.RunLister
}

// Load reads a run's log, lists its children and asks whether a live
// process drives it (Probe). A run without records is an error wrapping
// polyloop.ErrRunNotFound.
func Load(ctx context.Context, st Store, id string) (*Trajectory, error) {
	return load(ctx, st, id, nil)
}

// LoadPage is Load keeping only the steps of page p (BuildPage).
func LoadPage(ctx context.Context, st Store, id string, p Page) (*Trajectory, error) {
	return load(ctx, st, id, &p)
}

func load(ctx context.Context, st Store, id string, p *Page) (*Trajectory, error) {
	log, err := polyloop.ReadLog(ctx, st, id)
	if err != nil {
		return nil, err
	}
	if log.Empty() {
		return nil, fmt.Errorf("%w: %q", polyloop.ErrRunNotFound, id)
	}
	log.RunID = id
	t := build(log, p)
	if t.Children, err = st.ListRuns(ctx, polyloop.RunFilter{ParentRunID: id}); err != nil {
		return nil, err
	}
	if err := Probe(ctx, st, t); err != nil {
		return nil, err
	}
	return t, nil
}
