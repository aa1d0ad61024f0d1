package polyloop_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
)

// TestRenderViewBounded: a view template that would loop for ever, build
// a string of gigabytes or write one fails with ErrTemplateLimit instead;
// an ordinary one renders as before.
func TestRenderViewBounded(t *testing.T) {
	v := polyloop.ViewContent{Name: "notes", Version: 2, Entries: []polyloop.ViewEntry{{Namespace: "ns", Key: "k", Version: 1, Value: []byte(`"v"`)}}}
	for name, tmpl := range map[string]string{
		"endless range":   `{{range 100000000000}}{{end}}`,
		"nested ranges":   `{{range 100000}}{{range 100000}}{{end}}{{end}}`,
		"doubling":        `{{$x := "ab"}}{{range 64}}{{$x = printf "%s%s" $x $x}}{{end}}{{len $x}}`,
		"huge output":     `{{range 100000000}}xxxxxxxxxxxxxxxx{{end}}`,
		"template fan":    `{{define "a"}}{{template "b" .}}{{template "b" .}}{{end}}{{define "b"}}{{template "c" .}}{{template "c" .}}{{end}}{{define "c"}}{{range 1000000}}{{end}}{{end}}{{template "a" .}}`,
		"html of a range": `{{range 1000000}}{{html "<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<<"}}{{end}}`,
	} {
		_, err := polyloop.RenderView(tmpl, v)
		if !errors.Is(err, polyloop.ErrTemplateLimit) {
			t.Errorf("%s: %v, want ErrTemplateLimit", name, err)
		}
	}
	out, err := polyloop.RenderView("", v)
	if err != nil || out != "What you remember (notes, version 2):\n- ns/k: v\n" {
		t.Errorf("the default template: %q, %v", out, err)
	}
	out, err = polyloop.RenderView(`{{range $i, $e := .Entries}}{{if $i}}, {{end}}{{printf "%s=%s" .Key .Text}}{{end}}{{range 3}}.{{end}}`, v)
	if err != nil || !strings.HasPrefix(out, "k=v...") {
		t.Errorf("an ordinary template: %q, %v", out, err)
	}
}
