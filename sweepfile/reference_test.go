package sweepfile_test

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/polyloop/polyloop/sweepfile"
)

// specKeys lists the keys of the sweep file's spec as docs/sweeps.md names
// them: "retry.backoff_ms", "providers.<key>.max_connections",
// "scorers[].pattern".
func specKeys() []string {
	var keys []string
	var walk func(t reflect.Type, prefix string)
	walk = func(t reflect.Type, prefix string) {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		for i := range t.NumField() {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
			if name == "" || name == "-" {
				continue
			}
			key := prefix + name
			keys = append(keys, key)
			ft := t.Field(i).Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			switch {
			case ft.Kind() == reflect.Struct:
				walk(ft, key+".")
			case ft.Kind() == reflect.Map && ft.Elem().Kind() == reflect.Struct:
				walk(ft.Elem(), key+".<key>.")
			case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
				walk(ft.Elem(), key+"[].")
			}
		}
	}
	walk(reflect.TypeFor[sweepfile.File](), "")
	return keys
}

// TestReferenceDocumentsEveryKey fails when a key of spec.go has no row in
// docs/sweeps.md, or a row names a key spec.go does not have.
func TestReferenceDocumentsEveryKey(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../docs/sweeps.md")
	if err != nil {
		t.Fatal(err)
	}
	// The sweep file's table is the one whose first row is `name`.
	start := strings.Index(string(raw), "| `name` |")
	end := strings.Index(string(raw), "## Task files")
	if start < 0 || end < start {
		t.Fatal("docs/sweeps.md has no table of the sweep file's keys")
	}
	row := regexp.MustCompile("(?m)^\\| `([a-z_.<>\\[\\]]+)` \\|")
	doc := map[string]bool{}
	for _, m := range row.FindAllStringSubmatch(string(raw[start:end]), -1) {
		doc[m[1]] = true
	}
	spec := map[string]bool{}
	for _, k := range specKeys() {
		spec[k] = true
		if !doc[k] {
			t.Errorf("docs/sweeps.md does not document the sweep-file key `%s`: add a row for it", k)
		}
	}
	for k := range doc {
		if !spec[k] {
			t.Errorf("docs/sweeps.md documents the key `%s`, which sweepfile/spec.go does not have", k)
		}
	}
}
