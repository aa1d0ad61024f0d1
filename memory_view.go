package polyloop

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"text/template"
)

// ContextView is the curated context the model is shown: a named view whose
// versions are immutable sets of remembered entries (package memory holds
// one). Before each model-call intent the loop asks for the current version,
// records it on the intent (ModelCallIntent.View), and shows its rendering
// (AgentMemory.Template) as one system message after the system prompt. A
// resume never asks again for a call already made, and a version never
// changes, so what the model saw is reproducible from the log.
//
// Contract:
//   - CurrentView returns the version the next model call shows. Its error
//     propagates out of Run/Resume unchanged (a store failure should be a
//     *PersistenceError), before the intent is written: the call does not
//     happen.
//   - ViewVersion returns a version by number; the same number MUST give the
//     same content, always (versions are immutable). A version never made
//     is an error.
//   - Cancellation: a done ctx makes either return promptly with an error
//     that wraps ctx.Err().
//   - Ownership: the returned content becomes the caller's.
//   - Concurrency: both may be called concurrently, by several runs.
type ContextView interface {
	CurrentView(ctx context.Context) (ViewContent, error)
	ViewVersion(ctx context.Context, version int64) (ViewContent, error)
}

// ViewRef names one immutable version of a view.
type ViewRef struct {
	Name    string `json:"name"`
	Version int64  `json:"version"`
}

// ViewContent is one version of a view: its entries, in the view's order.
// Version 0 is the empty view before its first adjustment.
type ViewContent struct {
	Name    string      `json:"name"`
	Version int64       `json:"version"`
	Entries []ViewEntry `json:"entries,omitempty"`
}

// Ref is the content's reference.
func (c ViewContent) Ref() ViewRef { return ViewRef{Name: c.Name, Version: c.Version} }

// ViewEntry is one remembered entry shown by a view, at the version the view
// holds.
type ViewEntry struct {
	Namespace string          `json:"namespace"`
	Key       string          `json:"key"`
	Version   int64           `json:"version"`
	Value     json.RawMessage `json:"value"`
}

// Text is the entry's value for people: the text of a JSON string, the JSON
// itself otherwise.
func (e ViewEntry) Text() string {
	var s string
	if len(e.Value) > 0 && e.Value[0] == '"' && json.Unmarshal(e.Value, &s) == nil {
		return s
	}
	return string(e.Value)
}

// DefaultViewTemplate renders a view as a short list, or nothing when the
// view is empty (the request then has no view message).
const DefaultViewTemplate = `{{if .Entries}}What you remember ({{.Name}}, version {{.Version}}):
{{range .Entries}}- {{.Namespace}}/{{.Key}}: {{.Text}}
{{end}}{{end}}`

// viewTemplate parses a view template (text/template over a ViewContent);
// empty is DefaultViewTemplate. It is instrumented to render within
// templateLimits.
func viewTemplate(text string) (*template.Template, error) {
	if text == "" {
		text = DefaultViewTemplate
	}
	return parseBoundedTemplate("view", text, "missingkey=error")
}

// RenderView renders a view version with a template (empty:
// DefaultViewTemplate), as the loop shows it to the model. The same template
// and content always give the same text. A rendering beyond
// MaxTemplateBytes, MaxTemplateBodies or MaxTemplateTime fails with
// ErrTemplateLimit.
func RenderView(tmpl string, v ViewContent) (string, error) {
	t, err := viewTemplate(tmpl)
	if err != nil {
		return "", err
	}
	return renderView(t, v)
}

func renderView(t *template.Template, v ViewContent) (string, error) {
	out, err := executeBounded(t, v, templateLimits)
	if err != nil {
		return "", fmt.Errorf("polyloop: rendering view %q version %d: %w", v.Name, v.Version, err)
	}
	return out, nil
}

// withView is the history with a view's rendering inserted as a system
// message after the system prompt, in buf (reused between calls); a
// rendering of only white space adds nothing.
func withView(buf, msgs []Message, text string) []Message {
	if strings.TrimSpace(text) == "" {
		return msgs
	}
	at := 0
	if len(msgs) > 0 && msgs[0].Role == RoleSystem {
		at = 1
	}
	buf = append(buf[:0], msgs[:at]...)
	buf = append(buf, Message{Role: RoleSystem, Content: text})
	return append(buf, msgs[at:]...)
}
