package memory

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// Adjust makes a new version of the view, in the order Memory.Apply keeps:
//
//  1. Input validation (*InvalidWriteError).
//  2. A broken View refuses it (*ReloadRequiredError).
//  3. An adjustment id this View committed returns that version again.
//  4. The pre-commit check (*RejectionError, receivable; nothing is
//     written): versions — the basis is the installed last version, and an
//     included entry's version is its live version in the Memory; sources —
//     an included entry's namespace is one of the view's sources; members —
//     an included entry is live, an excluded one is a member. When the
//     store already holds the adjustment's id (issued again after a crash),
//     that version is returned instead.
//  5. An adjustment that includes and excludes nothing stops here: the
//     installed version is returned, and nothing is committed.
//  6. The store's commit and the checks of what it returned: any failure
//     is a *polyloop.PersistenceError and leaves the View broken; nothing
//     is installed or retried.
//  7. The local install.
func (v *View) Adjust(ctx context.Context, a Adjustment) (ViewVersion, error) {
	if err := v.checkInput(a); err != nil {
		return ViewVersion{}, err
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if err := v.ready(ctx); err != nil {
		return ViewVersion{}, err
	}
	if vv, ok := v.commits[a.ID]; ok {
		vv.Replayed = true
		return vv, nil
	}
	next, rejected, err := v.next(ctx, a)
	if err != nil {
		return ViewVersion{}, err
	}
	if rejected != nil {
		return v.rejected(ctx, a, rejected)
	}
	if len(a.Include) == 0 && len(a.Exclude) == 0 {
		return v.current, nil
	}
	w := ViewWrite{ID: a.ID, Basis: a.Basis, Next: next}
	got, err := v.store.CommitView(ctx, w)
	if err == nil {
		err = checkViewCommit(w, got)
	}
	if err != nil {
		return ViewVersion{}, v.fail(ctx, a, err)
	}
	if got.Version > v.current.Version {
		v.current = got
	}
	if !got.Replayed {
		v.commits[a.ID] = got
	}
	return got, nil
}

func (v *View) checkInput(a Adjustment) error {
	if !validName(a.ID) {
		return invalid(a.ID, "the adjustment id must be a non-empty name")
	}
	if a.Basis < 0 {
		return invalid(a.ID, "basis version %d", a.Basis)
	}
	seen := map[EntryID]bool{}
	for _, id := range append(exceptIDs(a.Include), a.Exclude...) {
		if !validName(id.Namespace) || !validName(id.Key) {
			return invalid(a.ID, "entry %q: namespace and key must be names", id)
		}
		if seen[id] {
			return invalid(a.ID, "%s is named twice", id)
		}
		seen[id] = true
	}
	return nil
}

func exceptIDs(es []Expect) []EntryID {
	ids := make([]EntryID, len(es))
	for i, e := range es {
		ids[i] = e.ID()
	}
	return ids
}

// next builds the adjusted version from the installed one, or says why the
// pre-commit check rejects the adjustment. v.mu is held.
func (v *View) next(ctx context.Context, a Adjustment) (ViewVersion, *RejectionError, error) {
	reject := func(what, format string, args ...any) (ViewVersion, *RejectionError, error) {
		return ViewVersion{}, &RejectionError{View: v.opts.Name, WriteID: a.ID, What: what, Reason: fmt.Sprintf(format, args...)}, nil
	}
	if a.Basis != v.current.Version {
		return reject("version", "made from version %d, the view is at version %d", a.Basis, v.current.Version)
	}
	members := map[EntryID]Entry{}
	for _, m := range v.current.Members {
		members[m.ID()] = m
	}
	for _, id := range a.Exclude {
		if _, ok := members[id]; !ok {
			return reject("member", "%s is not a member", id)
		}
		delete(members, id)
	}
	for _, inc := range a.Include {
		if !slices.Contains(v.opts.Sources, inc.Namespace) {
			return reject("source", "%s is not in the view's sources (%v)", inc.ID(), v.opts.Sources)
		}
		e, ok, err := v.opts.Memory.Get(ctx, inc.Namespace, inc.Key)
		switch {
		case err != nil:
			return ViewVersion{}, nil, err
		case !ok:
			return reject("member", "%s is not a live entry", inc.ID())
		case e.Version != inc.Version:
			return reject("version", "%s is at version %d, the adjustment shows version %d", inc.ID(), e.Version, inc.Version)
		}
		members[e.ID()] = e
	}
	next := ViewVersion{View: v.opts.Name, Version: a.Basis + 1, Sources: slices.Clone(v.opts.Sources), Provenance: a.Provenance}
	next.Provenance.WriteID = a.ID
	for _, m := range members {
		next.Members = append(next.Members, m)
	}
	sortedEntries(next.Members)
	return next, nil, nil
}

// rejected reports a rejection, unless the store already committed the
// adjustment's id: then that version is returned.
func (v *View) rejected(ctx context.Context, a Adjustment, r *RejectionError) (ViewVersion, error) {
	if len(a.Include) == 0 && len(a.Exclude) == 0 {
		return ViewVersion{}, r
	}
	got, found, err := v.store.LookupViewWrite(ctx, a.ID)
	if err == nil && found && (got.View != v.opts.Name || got.Version < 1) {
		err = fmt.Errorf("%w: LookupViewWrite(%q) returned view %q version %d", ErrPortContract, a.ID, got.View, got.Version)
	}
	if err != nil {
		return ViewVersion{}, v.fail(ctx, a, err)
	}
	if !found {
		return ViewVersion{}, r
	}
	got.Replayed = true
	return got, nil
}

// checkViewCommit checks what the store returned for a view write.
func checkViewCommit(w ViewWrite, got ViewVersion) error {
	if got.View != w.Next.View || got.Version < 1 || (!got.Replayed && (got.Version != w.Basis+1 || len(got.Members) != len(w.Next.Members))) {
		return fmt.Errorf("%w: view write %q (version %d of %q, %d members) got version %d of %q with %d members",
			ErrPortContract, w.ID, w.Basis+1, w.Next.View, len(w.Next.Members), got.Version, got.View, len(got.Members))
	}
	return nil
}

func (v *View) fail(ctx context.Context, a Adjustment, err error) error {
	pe := persistenceError("view commit", a.Provenance.RunID, err)
	v.broken = pe
	if cerr := ctx.Err(); cerr != nil && !errors.Is(pe, cerr) {
		return errors.Join(cerr, pe)
	}
	return pe
}
