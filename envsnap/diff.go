package envsnap

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/polyloop/polyloop"
)

// ChangeKind says how a path differs between two snapshots A and B.
type ChangeKind string

// The kinds of differences. A manifest lists changes to the image, and the
// image itself is not read, so where one snapshot changed a path and the
// other left the image's state (which may or may not hold the path), the
// difference is OnlyA or OnlyB: the path was created or changed in that
// snapshot only.
const (
	// Added: B holds the path, A does not (A deleted it from the image).
	Added ChangeKind = "added"
	// Removed: A holds the path, B does not (B deleted it from the image).
	Removed ChangeKind = "removed"
	// Changed: both hold the path, in different states (kind, mode,
	// content or link target).
	Changed ChangeKind = "changed"
	// OnlyA: A created or changed the path; B has the image's state.
	OnlyA ChangeKind = "only_a"
	// OnlyB: B created or changed the path; A has the image's state.
	OnlyB ChangeKind = "only_b"
)

// Change is one path whose state differs between two snapshots.
type Change struct {
	Path string     `json:"path"`
	Kind ChangeKind `json:"kind"`
}

// signature is what Diff compares of an entry: a directory that adds to
// the image's by its kind and mode only (its modification time moves
// whenever a file in it does), anything else by kind, mode, size, content
// and link target.
func signature(e Entry) string {
	if e.Kind == Dir && !e.Opaque {
		return fmt.Sprintf("%s %o", e.Kind, e.Mode)
	}
	return fmt.Sprintf("%s %o %d %s %s %t", e.Kind, e.Mode, e.Size, strings.Join(e.Chunks, ","), e.Target, e.Opaque)
}

// Diff lists the paths whose state differs between snapshots a and b,
// sorted by path (a directory before what it holds), from their manifests
// alone. Both are taken as changes to the same image.
func Diff(a, b Manifest) []Change {
	ea := make(map[string]Entry, len(a.Entries))
	for _, e := range a.Entries {
		ea[e.Path] = e
	}
	var out []Change
	seen := make(map[string]bool, len(b.Entries))
	for _, y := range b.Entries {
		seen[y.Path] = true
		x, ok := ea[y.Path]
		switch {
		case !ok && y.Kind == Deleted:
			out = append(out, Change{y.Path, Removed})
		case !ok:
			out = append(out, Change{y.Path, OnlyB})
		case x.Kind == Deleted && y.Kind == Deleted, signature(x) == signature(y):
		case x.Kind == Deleted:
			out = append(out, Change{y.Path, Added})
		case y.Kind == Deleted:
			out = append(out, Change{y.Path, Removed})
		default:
			out = append(out, Change{y.Path, Changed})
		}
	}
	for _, x := range a.Entries {
		if seen[x.Path] {
			continue
		}
		if x.Kind == Deleted {
			out = append(out, Change{x.Path, Added})
		} else {
			out = append(out, Change{x.Path, OnlyA})
		}
	}
	sort.Slice(out, func(i, j int) bool { return pathLess(out[i].Path, out[j].Path) })
	return out
}

// DiffRefs loads the manifests of two snapshots from store and diffs them
// (see Diff). An empty reference is the image unchanged (a run without an
// environment, or whose log names no snapshot yet).
func DiffRefs(ctx context.Context, store polyloop.BlobStore, a, b polyloop.EnvSnapshot) ([]Change, error) {
	if a == b {
		return nil, nil
	}
	var ms [2]Manifest
	for i, ref := range []polyloop.EnvSnapshot{a, b} {
		if ref == "" {
			continue
		}
		m, err := Load(ctx, store, ref)
		if err != nil {
			return nil, err
		}
		ms[i] = m
	}
	return Diff(ms[0], ms[1]), nil
}
