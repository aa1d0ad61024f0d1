package agentfile_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/polyloop/polyloop/agentfile"
)

type otherFile struct {
	Name   string   `yaml:"name"`
	Epochs int      `yaml:"epochs"`
	Items  []string `yaml:"items"`
	Inner  struct {
		Level float64 `yaml:"level"`
	} `yaml:"inner"`
}

var otherDoc = agentfile.Document{
	Noun:      "other file",
	Shape:     "an other file is a mapping with a name (docs/other.md)",
	Fields:    "other fields (name, epochs, items, inner)",
	Reference: "docs/other.md",
	TooLarge:  "split it",
}

func writeFile(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "x.yaml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Decode reads any strict YAML file as Check reads agent files: every
// problem at once, at its position, in the file's own words, and the
// caller's checks among them in file order.
func TestDecodeOtherDocument(t *testing.T) {
	t.Parallel()
	p := writeFile(t, "name: n\nepochs: two\nitems: [a, b]\nitems: [c]\ninner:\n  levle: 3\n")
	var v otherFile
	err := agentfile.Decode(p, otherDoc, &v, func(c *agentfile.Checker) {
		c.Fail("name must be longer", "name")
		c.Fail("this is under a value that did not decode", "epochs")
		c.Fail("at least 3 items", "items", 1)
	})
	var list agentfile.ErrorList
	if !errors.As(err, &list) || !errors.Is(err, agentfile.ErrInvalid) {
		t.Fatalf("err = %v, want an ErrorList", err)
	}
	want := []string{
		p + ":1:7: name: name must be longer",
		p + ":2:9: epochs: expected a value of type integer, found string",
		p + ":3:12: items[1]: at least 3 items",
		p + `:4:1: items: mapping key "items" already defined at 3:1`,
		p + `:6:3: inner.levle: unknown field "levle" (did you mean level?): the keys of inner are level (docs/other.md)`,
	}
	if got := strings.Split(err.Error(), "\n"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("problems:\n%s\nwant:\n%s", err, strings.Join(want, "\n"))
	}
	if v.Name != "n" || len(v.Items) != 2 {
		t.Errorf("decoded %+v", v)
	}
}

func TestDecodeOtherDocumentWords(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, text, want string }{
		{"empty", "# nothing\n", "the other file is empty (nothing but blank lines and comments): an other file is a mapping with a name (docs/other.md)"},
		{"not a mapping", "- a\n", "1:1: expected a mapping of other fields (name, epochs, items, inner)"},
		{"two documents", "name: a\n---\nname: b\n", "the file holds 2 YAML documents (a line --- starts another): an other file is one mapping"},
		{"secret", "name: sk-abcdefghijklmnopqrstuvwxyz\n", "looks like an OpenAI-style API key"},
	} {
		p := writeFile(t, tt.text)
		called := false
		err := agentfile.Decode(p, otherDoc, &otherFile{}, func(*agentfile.Checker) { called = true })
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
		if called {
			t.Errorf("%s: the check ran on a file that did not decode, or held a secret", tt.name)
		}
	}
	if err := agentfile.Decode(writeFile(t, "name: ok\n"), otherDoc, &otherFile{}, nil); err != nil {
		t.Errorf("a good file: %v", err)
	}
	big := writeFile(t, "name: "+strings.Repeat("x", agentfile.MaxFileSize))
	if err := agentfile.Decode(big, otherDoc, &otherFile{}, nil); !errors.Is(err, agentfile.ErrLimit) || !strings.Contains(err.Error(), "the most an other file may hold: split it") {
		t.Errorf("a file over the size limit: %v", err)
	}
}
