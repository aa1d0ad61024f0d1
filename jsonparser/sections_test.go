package jsonparser_test

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// A golden file is a sequence of sections, each a "-- name --" line
// followed by the section's text. Section texts are indented JSON, whose
// lines never start with "-- ".
type section struct {
	name string
	data []byte
}

func formatSections(secs []section) []byte {
	var buf bytes.Buffer
	for _, s := range secs {
		buf.WriteString("-- " + s.name + " --\n")
		buf.Write(s.data)
	}
	return buf.Bytes()
}

func parseSections(data []byte) map[string][]byte {
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

// checkGolden compares got with the golden file at path, or rewrites the
// file with -update.
func checkGolden(t *testing.T, path string, got []section) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, formatSections(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	want := parseSections(raw)
	for _, s := range got {
		w, ok := want[s.name]
		switch {
		case !ok:
			t.Errorf("%s has no section %q (run with -update)", path, s.name)
		case !bytes.Equal(w, s.data):
			t.Errorf("section %q of %s differs:\n--- got\n%s--- want\n%s", s.name, path, s.data, w)
		}
		delete(want, s.name)
	}
	for name := range want {
		t.Errorf("%s has a stale section %q (run with -update)", path, name)
	}
}
