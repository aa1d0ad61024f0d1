package polyloop

import (
	"errors"
	"strings"
	"testing"
	"time"
)

var generous = templateBounds{Bytes: 1 << 20, Bodies: 100000, Time: time.Minute}

// TestSameTextAsTextTemplate: instrumenting changes nothing a template
// writes, whatever its constructs.
func TestBoundedTemplateWritesAsTextTemplate(t *testing.T) {
	data := map[string]any{"Items": []string{"a", "<b>", "c d"}, "Empty": []int{}, "N": 3}
	for tmpl, want := range map[string]string{
		`{{range $i, $x := .Items}}{{if $i}}, {{end}}{{$x}}{{end}}`:                            "a, <b>, c d",
		`{{range .Empty}}x{{else}}none{{end}}`:                                                 "none",
		`{{with .Items}}{{len .}}{{else}}no{{end}}`:                                            "3",
		`{{range .Items}}{{if eq . "c d"}}{{break}}{{end}}{{.}};{{end}}`:                       "a;<b>;",
		`{{define "u"}}[{{.}}]{{end}}{{range .Items}}{{template "u" .}}{{end}}`:                "[a][<b>][c d]",
		`{{printf "%d-%s" .N "x"}} {{html "<b>"}} {{js "'"}} {{urlquery "a b"}} {{print 1 2}}`: `3-x &lt;b&gt; \' a+b 1 2`,
		`{{range .N}}{{.}}{{end}}{{/* comment */}}`:                                            "012",
	} {
		tp, err := parseBoundedTemplate("t", tmpl)
		if err != nil {
			t.Fatalf("%s: %v", tmpl, err)
		}
		got, err := executeBounded(tp, data, generous)
		if err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", tmpl, got, err, want)
		}
	}
}

// TestEachBound: each bound stops a rendering with ErrTemplateLimit, saying which.
func TestEachTemplateBound(t *testing.T) {
	for _, tc := range []struct {
		tmpl string
		lim  templateBounds
		says string
	}{
		{`{{range 1000}}x{{end}}`, templateBounds{Bytes: 999, Bodies: 1 << 30, Time: time.Minute}, "wrote more than 999 bytes"},
		{`{{printf "%0500d" 1}}`, templateBounds{Bytes: 499, Bodies: 1 << 30, Time: time.Minute}, "built a string of more than 499 bytes"},
		{`{{range 1000}}{{end}}`, templateBounds{Bytes: 1 << 20, Bodies: 999, Time: time.Minute}, "more than 999 bodies"},
		{`{{define "r"}}{{template "r" .}}{{end}}{{template "r" .}}`, templateBounds{Bytes: 1 << 20, Bodies: 999, Time: time.Minute}, "more than 999 bodies"},
		{`{{range 1000}}{{end}}`, templateBounds{Bytes: 1 << 20, Bodies: 1 << 30, Time: time.Nanosecond}, "longer than 1ns"},
	} {
		tp, err := parseBoundedTemplate("t", tc.tmpl)
		if err != nil {
			t.Fatal(err)
		}
		_, err = executeBounded(tp, nil, tc.lim)
		if !errors.Is(err, ErrTemplateLimit) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v, want ErrTemplateLimit saying %q", tc.tmpl, err, tc.says)
		}
	}
}

// TestRenderingsAreIndependent: each Execute has its own budget.
func TestTemplateRenderingsAreIndependent(t *testing.T) {
	tp, err := parseBoundedTemplate("t", `{{range 600}}{{end}}ok`)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if out, err := executeBounded(tp, nil, templateBounds{Bytes: 10, Bodies: 1000, Time: time.Minute}); out != "ok" || err != nil {
			t.Fatalf("%q, %v", out, err)
		}
	}
}
