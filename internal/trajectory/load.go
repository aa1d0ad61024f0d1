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
	var t *Trajectory
	var err error
	if p != nil { // read as it is folded: the page, not the log
		t, err = buildStream(polyloop.StreamLog(ctx, st, id), p)
	} else {
		var log polyloop.RunLog
		if log, err = polyloop.ReadLog(ctx, st, id); err == nil {
			t = build(log, nil)
		}
	}
	if err != nil {
		return nil, err
	}
	if t.Records == 0 {
		return nil, fmt.Errorf("%w: %q", polyloop.ErrRunNotFound, id)
	}
	t.RunID = id
	if t.Children, err = st.ListRuns(ctx, polyloop.RunFilter{ParentRunID: id}); err != nil {
		return nil, err
	}
	if err := Probe(ctx, st, t); err != nil {
		return nil, err
	}
	return t, nil
}
