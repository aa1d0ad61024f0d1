package agentfile

import (
	"slices"
	"strings"
	"text/template"
	"unicode"

	"github.com/polyloop/polyloop"
)

// memory checks the memory section.
func (v *validator) memory(f *File) {
	m := f.Memory
	if m == nil {
		return
	}
	p := path{"memory"}
	seen := map[string]bool{}
	for i, ns := range m.Namespaces {
		if !memoryName(ns) {
			v.fail(p.at("namespaces", i), "expected a namespace: a non-empty name without control characters, at most 512 bytes; found %q", ns)
		}
		if seen[ns] {
			v.fail(p.at("namespaces", i), "namespace %q is named twice", ns)
		}
		seen[ns] = true
	}
	if m.View != nil {
		v.view(p.at("view"), m.View, m.namespaces(f.Name))
	}
	if m.Maintain != nil {
		v.maintain(p.at("maintain"), m.Maintain)
	}
}

func memoryName(s string) bool {
	return strings.TrimSpace(s) != "" && len(s) <= 512 && strings.IndexFunc(s, unicode.IsControl) < 0
}

func (v *validator) view(p path, vs *ViewSpec, namespaces []string) {
	if vs.Name != "" && !memoryName(vs.Name) {
		v.fail(p.at("name"), "expected a view name without control characters, found %q", vs.Name)
	}
	for i, s := range vs.Sources {
		if !slices.Contains(namespaces, s) {
			v.fail(p.at("sources", i), "source %q is not one of the memory's namespaces (%s)", s, strings.Join(namespaces, ", "))
		}
	}
	if vs.Template != "" {
		if _, err := template.New("view").Parse(vs.Template); err != nil {
			v.fail(p.at("template"), "the view template does not parse (text/template): %v", err)
			return
		}
		sample := polyloop.ViewContent{Name: "view", Version: 1, Entries: []polyloop.ViewEntry{{Namespace: "ns", Key: "key", Version: 1, Value: []byte(`"value"`)}}}
		if _, err := polyloop.RenderView(vs.Template, sample); err != nil {
			v.fail(p.at("template"), "the view template does not run on a view (its fields: .Name, .Version, .Entries with .Namespace, .Key, .Version, .Value, .Text): %v", err)
		}
	}
}

func (v *validator) maintain(p path, ms *MaintainSpec) {
	v.policy(p.at("on_proposal_failure"), ms.OnProposalFailure, "skip", "fail")
	v.policy(p.at("on_conflict"), ms.OnConflict, "skip", "fail", "regenerate")
	v.policy(p.at("on_view_rejected"), ms.OnViewRejected, "skip", "fail")
	v.nonNegative(p.at("max_steps"), int64(ms.MaxSteps))
	v.nonNegative(p.at("max_proposals"), int64(ms.MaxProposals))
	v.nonNegative(p.at("max_entries"), int64(ms.MaxEntries))
	if ms.MaxProposals > 0 && ms.OnConflict != "regenerate" {
		v.fail(p.at("max_proposals"), "max_proposals bounds on_conflict: regenerate, and on_conflict is %q", ms.OnConflict)
	}
	for i, t := range ms.Script {
		v.turn(p.at("script", i), t)
	}
}

func (v *validator) policy(p path, value string, allowed ...string) {
	if value != "" && !slices.Contains(allowed, value) {
		v.fail(p, "expected one of %s, found %q", strings.Join(allowed, ", "), value)
	}
}
