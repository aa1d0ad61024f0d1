package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/polyloop/polyloop"
)

// Adjustment changes which entries a view shows.
type Adjustment struct {
	// ID is the adjustment's idempotency key (as Write.ID).
	ID string
	// Basis is the view version the adjustment was made from.
	Basis int64
	// Include are entries to show at these versions (replacing a member
	// of the same key); Exclude are members to drop.
	Include    []Expect
	Exclude    []EntryID
	Provenance Provenance
}

// ViewOptions configure a View.
type ViewOptions struct {
	// Name names the view (required).
	Name string
	// Memory is where the view's members live (required).
	Memory *Memory
	// Sources are the namespaces members may come from (default: all the
	// Memory serves).
	Sources []string
}

// View is the curated set of entries an agent's model is shown (a
// polyloop.ContextView). Each adjustment makes a new immutable version. It
// is safe for concurrent use; share one per process among the runs that
// show it.
//
// It loads its last version at first use. After a persistence failure it is
// broken, as a Memory is: Adjust and Current (and CurrentView) fail with a
// *ReloadRequiredError until Reload succeeds; versions by number (At,
// ViewVersion) read the store and stay available.
type View struct {
	store ViewStore
	opts  ViewOptions

	mu      sync.Mutex
	loaded  bool
	broken  error
	current ViewVersion
	commits map[string]ViewVersion
}

// NewView returns a View over store. Nothing is read until first use.
func NewView(store ViewStore, opts ViewOptions) (*View, error) {
	switch {
	case store == nil:
		return nil, errors.New("memory: NewView: the store is nil")
	case opts.Memory == nil:
		return nil, errors.New("memory: NewView: no Memory")
	case !validName(opts.Name):
		return nil, fmt.Errorf("memory: NewView: invalid view name %q", opts.Name)
	}
	if len(opts.Sources) == 0 {
		opts.Sources = opts.Memory.Namespaces()
	}
	for _, s := range opts.Sources {
		if !slices.Contains(opts.Memory.opts.Namespaces, s) {
			return nil, fmt.Errorf("memory: NewView: source %q is not served by the Memory", s)
		}
	}
	opts.Sources = slices.Clone(opts.Sources)
	return &View{store: store, opts: opts}, nil
}

// Name is the view's name.
func (v *View) Name() string { return v.opts.Name }

// Describe implements polyloop.Describer: the view's name and sources, in
// the snapshot.
func (v *View) Describe() polyloop.Component {
	cfg, _ := json.Marshal(map[string]any{"name": v.opts.Name, "sources": v.opts.Sources})
	return polyloop.Component{Name: "memory.View", Config: cfg}
}

// Reload installs the view's last version from the store and makes a broken
// View work again.
func (v *View) Reload(ctx context.Context) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.load(ctx)
}

func (v *View) load(ctx context.Context) error {
	cur, err := v.last(ctx, "view load")
	if err != nil {
		return err
	}
	v.current, v.commits, v.loaded, v.broken = cur, map[string]ViewVersion{}, true, nil
	return nil
}

// last reads the view's last version from the store; a failure is a
// *polyloop.PersistenceError of op.
func (v *View) last(ctx context.Context, op string) (ViewVersion, error) {
	cur, err := v.store.LoadView(ctx, v.opts.Name)
	if err == nil && (cur.View != v.opts.Name && cur.Version != 0 || cur.Version < 0) {
		err = fmt.Errorf("%w: LoadView(%q) returned view %q version %d", ErrPortContract, v.opts.Name, cur.View, cur.Version)
	}
	if err != nil {
		return ViewVersion{}, persistenceError(op, "", err)
	}
	cur.View = v.opts.Name
	return cur, nil
}

func (v *View) ready(ctx context.Context) error {
	if v.broken != nil {
		return &ReloadRequiredError{Entity: "view " + v.opts.Name, Cause: v.broken}
	}
	if !v.loaded {
		return v.load(ctx)
	}
	return nil
}

// Current returns the view's installed last version.
func (v *View) Current(ctx context.Context) (ViewVersion, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if err := v.ready(ctx); err != nil {
		return ViewVersion{}, err
	}
	return v.current, nil
}

// At returns a version by number, from the store.
func (v *View) At(ctx context.Context, version int64) (ViewVersion, error) {
	if version == 0 {
		return ViewVersion{View: v.opts.Name}, nil
	}
	vv, err := v.store.ViewAt(ctx, v.opts.Name, version)
	if errors.Is(err, ErrNoVersion) {
		return ViewVersion{}, fmt.Errorf("memory: view %q: %w %d", v.opts.Name, ErrNoVersion, version)
	}
	if err != nil {
		return ViewVersion{}, persistenceError("view read", "", err)
	}
	return vv, nil
}

// CurrentView implements polyloop.ContextView.
func (v *View) CurrentView(ctx context.Context) (polyloop.ViewContent, error) {
	cur, err := v.Current(ctx)
	return cur.Content(), err
}

// ViewVersion implements polyloop.ContextView.
func (v *View) ViewVersion(ctx context.Context, version int64) (polyloop.ViewContent, error) {
	vv, err := v.At(ctx, version)
	return vv.Content(), err
}
