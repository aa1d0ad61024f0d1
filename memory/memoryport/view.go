package memoryport

import "github.com/polyloop/polyloop"

// ViewVersion is one immutable version of a view: the entries it shows, at
// the versions it shows them (with their values, so that a version renders
// the same bytes forever), the namespaces its members may come from, and
// the adjustment that made it.
type ViewVersion struct {
	View    string   `json:"view"`
	Version int64    `json:"version"`
	Sources []string `json:"sources,omitempty"`
	// Members are sorted by namespace and key.
	Members    []Entry    `json:"members,omitempty"`
	Provenance Provenance `json:"provenance"`
	// Replayed and Digest, from a store: as on Commit. Not recorded.
	Replayed bool   `json:"-"`
	Digest   string `json:"-"`
}

// Content is the version as the loop shows it.
func (v ViewVersion) Content() polyloop.ViewContent {
	c := polyloop.ViewContent{Name: v.View, Version: v.Version}
	for _, m := range v.Members {
		c.Entries = append(c.Entries, polyloop.ViewEntry{Namespace: m.Namespace, Key: m.Key, Version: m.Version, Value: m.Value})
	}
	return c
}

// Ref is the version's reference.
func (v ViewVersion) Ref() ViewRef { return ViewRef{View: v.View, Version: v.Version} }

// ViewRef names a view version (as the adjustment's result records it).
type ViewRef struct {
	View    string `json:"view"`
	Version int64  `json:"version"`
}

// ViewWrite is what View gives its store: Next, to commit as version
// Basis+1 if the view's last version is Basis.
type ViewWrite struct {
	ID    string      `json:"id"`
	Basis int64       `json:"basis"`
	Next  ViewVersion `json:"next"`
}
