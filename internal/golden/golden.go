// Package golden reads, checks and rewrites the golden files of the
// repository's tests: files of sections (Check), each a "-- name --" line
// followed by the section's text — indented JSON (see JSON), whose lines
// never start with "-- " — and whole files (File).
//
// -rewrite is the one flag of every golden file: run `go test -rewrite` and
// Check and File write the files instead of comparing. It is
// github.com/cockroachdb/datadriven's flag too: in a test binary that
// imports datadriven, datadriven defines it and this package uses that
// flag; otherwise this package defines it (see Rewrite). A test package
// that imports this package MUST NOT define a flag named rewrite itself.
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

// rewriteFlag is the name of the flag that rewrites golden files.
const rewriteFlag = "rewrite"

// The flag is defined here only when no package initialized before this
// one defined it. datadriven does, and is always initialized first in a
// binary holding both: its import path sorts before this one, and Go
// initializes packages in import-path order among those whose imports are
// ready (the Go spec since Go 1.21), which both are at the same step.
func init() {
	if flag.Lookup(rewriteFlag) == nil {
		flag.Bool(rewriteFlag, false, "rewrite the golden files in testdata/ instead of comparing with them")
	}
}

// Rewrite reports whether the test binary runs with -rewrite, whoever
// defined the flag.
func Rewrite() bool {
	f := flag.Lookup(rewriteFlag)
	if f == nil {
		return false
	}
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return false
	}
	on, _ := g.Get().(bool)
	return on
}

// Section is one named section of a golden file. Data ends with a newline.
type Section struct {
	Name string
	Data []byte
}

// Check compares got with the sections of the golden file at path, or
// rewrites the file with -rewrite. A section missing from the file, one
// that differs, and one in the file but not in got are errors.
func Check(t testing.TB, path string, got []Section) {
	t.Helper()
	if Rewrite() {
		if err := os.WriteFile(path, format(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -rewrite to create it)", err)
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
			problems = append(problems, fmt.Sprintf("%s has no section %q (go test -rewrite rewrites it)", path, s.Name))
		case !bytes.Equal(w, s.Data):
			problems = append(problems, fmt.Sprintf("section %q of %s differs:\n--- got\n%s--- want\n%s", s.Name, path, s.Data, w))
		}
		delete(want, s.Name)
	}
	for name := range want {
		problems = append(problems, fmt.Sprintf("%s has a stale section %q (go test -rewrite rewrites it)", path, name))
	}
	return problems
}

// File compares got with the whole file at path, or writes the file with
// -rewrite.
func File(t testing.TB, path string, got []byte) {
	t.Helper()
	if Rewrite() {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if problem := fileProblem(path, got); problem != "" {
		t.Error(problem)
	}
}

// fileProblem says how got differs from the file at path, or "".
func fileProblem(path string, got []byte) string {
	want, err := os.ReadFile(path)
	switch {
	case err != nil:
		return fmt.Sprintf("%v (run go test -rewrite to create it)", err)
	case !bytes.Equal(got, want):
		return fmt.Sprintf("%s differs (go test -rewrite rewrites it); got:\n%s", path, got)
	}
	return ""
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
