package view

import (
	"encoding/json"
	"testing"
)

// TestRecordJSON: a record's JSON is indented in its own order, and the
// characters encoding/json escapes for HTML read as themselves — only
// those escapes: an escaped backslash before "u003c" stays as it is.
func TestRecordJSON(t *testing.T) {
	raw, err := json.Marshal(struct {
		B string `json:"b"`
		A string `json:"a"`
	}{B: `<script> & \u003c`, A: "x"})
	if err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"b\": \"<script> & \\\\u003c\",\n  \"a\": \"x\"\n}"
	if got := recordJSON(raw); got != want {
		t.Errorf("recordJSON(%s) = %q, want %q", raw, got, want)
	}
	for in, want := range map[string]string{
		`"\u003C\u003e\u0026"`: `"<>&"`,
		`"\u00e9\n"`:           `"\u00e9\n"`,
		`not json`:             `not json`,
	} {
		if got := recordJSON(json.RawMessage(in)); got != want {
			t.Errorf("recordJSON(%s) = %s, want %s", in, got, want)
		}
	}
}
