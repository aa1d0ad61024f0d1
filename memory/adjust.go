package memory

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/polyloop/polyloop/memory/memoryport"
)

// Adjust makes a new version of the view, in the order Memory.Apply keeps:
//
//  1. Input validation (*InvalidWriteError).
//  2. A broken View refuses it (*ReloadRequiredError).
//  3. The adjustment's id: an adjustment that includes or excludes
//     something, whose id is committed already — by this View, or in the
//     store (issued again after a crash, or by another process) — returns
//     that version, Replayed, when applied to its basis version it makes
//     the same members (ViewWriteDigest); otherwise it is an
//     *InvalidWriteError that errors.Is ErrWriteIDReused. Either way
//     nothing is written. A failure of the store's reads here is a
//     *polyloop.PersistenceError; nothing was written, and the View keeps
//     working.
//  4. The pre-commit check (*RejectionError, receivable; nothing is
//     written), against the store: the View reads the view's last version
//     (and installs it when newer than its own), and the Memory the
//     included entries' last versions, so an adjustment made from what
//     another process has replaced meets the check too. Versions — the
//     basis is the view's last version, and an included entry's version is
//     its live version; sources — an included entry's namespace is one of
//     the view's sources; members — an included entry is live, an excluded
//     one is a member. A failure of these reads is a
//     *polyloop.PersistenceError (the Memory's, or the View's, which keeps
//     working: nothing was written).
//  5. An adjustment that includes and excludes nothing stops here: the
//     installed version is returned, and nothing is committed.
//  6. The store's commit and the checks of what it returned: any failure
//     (ErrWriteIDReused from a writer of the same id that committed since
//     step 3 included) is a *polyloop.PersistenceError and leaves the View
//     broken; nothing is installed or retried.
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
	if vv, found, err := v.committed(ctx, a); err != nil || found {
		return vv, err
	}
	next, rejected, err := v.next(ctx, a)
	if err != nil {
		return ViewVersion{}, err
	}
	if rejected != nil {
		return ViewVersion{}, rejected
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
	if err := v.refresh(ctx); err != nil {
		return ViewVersion{}, nil, err
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
	}
	live, err := v.opts.Memory.current(ctx, exceptIDs(a.Include))
	if err != nil {
		return ViewVersion{}, nil, err
	}
	for _, inc := range a.Include {
		e, ok := live[inc.ID()]
		switch {
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

// refresh reads the view's last version from the store and installs it
// when it is newer than the installed one (another View on the store made
// it). v.mu is held.
func (v *View) refresh(ctx context.Context) error {
	last, err := v.last(ctx, "view read")
	if err == nil && last.Version > v.current.Version {
		v.current = last
	}
	return err
}

// committed looks an adjustment's id up, in this View and then in the
// store, and checks that the version found under it is the one the
// adjustment makes. An adjustment that changes nothing is never committed.
// v.mu is held.
func (v *View) committed(ctx context.Context, a Adjustment) (ViewVersion, bool, error) {
	if len(a.Include) == 0 && len(a.Exclude) == 0 {
		return ViewVersion{}, false, nil
	}
	got, ok := v.commits[a.ID]
	if !ok {
		var err error
		got, ok, err = v.store.LookupViewWrite(ctx, a.ID)
		if err == nil && ok && (got.View != v.opts.Name || got.Version < 1) {
			err = fmt.Errorf("%w: LookupViewWrite(%q) returned view %q version %d", ErrPortContract, a.ID, got.View, got.Version)
		}
		if err != nil || !ok {
			return ViewVersion{}, false, viewLookupError(a, err)
		}
	}
	same, err := v.makes(ctx, a, got)
	if err != nil || !same {
		return ViewVersion{}, false, err
	}
	got.Replayed = true
	return got, true, nil
}

// makes reports whether the adjustment, applied to its basis version,
// makes the members of got (as the store compares them: ViewWriteDigest),
// or returns why not as an error.
func (v *View) makes(ctx context.Context, a Adjustment, got ViewVersion) (bool, error) {
	base := v.current
	if a.Basis != base.Version {
		var err error
		if base, err = v.At(ctx, a.Basis); errors.Is(err, ErrNoVersion) {
			return false, reused(a.ID, "members")
		} else if err != nil {
			return false, viewLookupError(a, err)
		}
	}
	members := map[EntryID]Entry{}
	for _, m := range base.Members {
		members[m.ID()] = Entry{Namespace: m.Namespace, Key: m.Key, Version: m.Version}
	}
	for _, id := range a.Exclude {
		delete(members, id)
	}
	for _, inc := range a.Include {
		members[inc.ID()] = Entry{Namespace: inc.Namespace, Key: inc.Key, Version: inc.Version}
	}
	made := ViewVersion{View: v.opts.Name, Sources: v.opts.Sources, Members: sortedEntries(slices.Collect(maps.Values(members)))}
	if memoryport.ViewWriteDigest(ViewWrite{Next: made}) != memoryport.ViewWriteDigest(ViewWrite{Next: got}) {
		return false, reused(a.ID, "members")
	}
	return true, nil
}

// viewLookupError marks a failure of the store's reads of an adjustment's
// id (nil for none).
func viewLookupError(a Adjustment, err error) error {
	if err == nil {
		return nil
	}
	return persistenceError("view lookup", a.Provenance.RunID, err)
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
