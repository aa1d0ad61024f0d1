// Package golden reads, checks and rewrites the golden files of the parser
// tests: a sequence of sections, each a "-- name --" line followed by the
// section's text. Section texts are indented JSON (see JSON), whose lines
// never start with "-- ".
//
// A test binary that imports the package has the -update flag: with it,
// Check rewrites the golden files instead of comparing.
package golden

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// Section is one named section of a golden file. Data ends with a newline.
type Section struct {
	Name string
	Data []byte
}

// Check compares got with the sections of the golden file at path, or
// rewrites the file with -update. A section missing from the file, one
// that differs, and one in the file but not in got are errors.
func Check(t testing.TB, path string, got []Section) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, format(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	for _, problem := range compare(path, parse(raw), got) {
		t.Error(problem)
	}
}

// compare lists how got differs from the sections of the file at path:
// sections missing from the file, differing, or in the file only.
func compare(path string, want map[string][]byte, got []Section) []string {
	var problems []string
	for _, s := range got {
		w, ok := want[s.Name]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("%s has no section %q (run with -update)", path, s.Name))
		case !bytes.Equal(w, s.Data):
			problems = append(problems, fmt.Sprintf("section %q of %s differs:\n--- got\n%s--- want\n%s", s.Name, path, s.Data, w))
		}
		delete(want, s.Name)
	}
	for name := range want {
		problems = append(problems, fmt.Sprintf("%s has a stale section %q (run with -update)", path, name))
	}
	return problems
}

// JSON encodes v as a section's text: indented by two spaces, without HTML
// escaping, ending with a newline.
func JSON(t testing.TB, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func format(secs []Section) []byte {
	var buf bytes.Buffer
	for _, s := range secs {
		buf.WriteString("-- " + s.Name + " --\n")
		buf.Write(s.Data)
	}
	return buf.Bytes()
}

func parse(data []byte) map[string][]byte {
	out := map[string][]byte{}
	var name string
	for _, line := range strings.SplitAfter(string(data), "\n") {
		if n, ok := strings.CutPrefix(line, "-- "); ok && strings.HasSuffix(n, " --\n") {
			name = strings.TrimSuffix(n, " --\n")
			out[name] = []byte{}
			continue
		}
		out[name] = append(out[name], line...)
	}
	return out
}
