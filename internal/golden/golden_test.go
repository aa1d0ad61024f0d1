package golden

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestFormatParseRoundTrip(t *testing.T) {
	t.Parallel()
	secs := []Section{
		{"a", []byte("{\n  \"x\": 1\n}\n")},
		{"empty", []byte{}},
		{"with dashes", []byte("-- not a header\n-- x -- y\n")},
	}
	got := parse(format(secs))
	want := map[string][]byte{"a": secs[0].Data, "empty": {}, "with dashes": secs[2].Data}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("parse(format(secs)) = %q, want %q", got, want)
	}
}

func TestJSON(t *testing.T) {
	t.Parallel()
	got := string(JSON(t, map[string]any{"html": "<a&b>", "n": []int{1}}))
	want := "{\n  \"html\": \"<a&b>\",\n  \"n\": [\n    1\n  ]\n}\n"
	if got != want {
		t.Fatalf("JSON = %q, want %q", got, want)
	}
}

// recorder is a testing.TB that keeps the errors reported to it.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func TestCheck(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "x.golden")
	file := []Section{{"same", []byte("1\n")}, {"changed", []byte("2\n")}, {"stale", []byte("3\n")}}
	if err := os.WriteFile(path, format(file), 0o644); err != nil {
		t.Fatal(err)
	}
	var ok recorder
	Check(&ok, path, file)
	if len(ok.errs) != 0 {
		t.Fatalf("Check of the file's own sections: %q", ok.errs)
	}
	var r recorder
	Check(&r, path, []Section{{"same", []byte("1\n")}, {"changed", []byte("22\n")}, {"new", []byte("4\n")}})
	for _, want := range []string{`section "changed"`, `no section "new"`, `stale section "stale"`} {
		found := false
		for _, e := range r.errs {
			found = found || strings.Contains(e, want)
		}
		if !found {
			t.Errorf("no error mentions %s; errors: %q", want, r.errs)
		}
	}
	if len(r.errs) != 3 {
		t.Errorf("%d errors, want 3: %q", len(r.errs), r.errs)
	}
}
