package golden

import (
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

func TestCheckPassesOnItsOwnFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "x.golden")
	secs := []Section{{"a", []byte("1\n")}, {"b", []byte("2\n")}}
	if err := os.WriteFile(path, format(secs), 0o644); err != nil {
		t.Fatal(err)
	}
	Check(t, path, secs)
}

func TestCompare(t *testing.T) {
	t.Parallel()
	file := parse(format([]Section{{"same", []byte("1\n")}, {"changed", []byte("2\n")}, {"stale", []byte("3\n")}}))
	problems := compare("x.golden", file, []Section{{"same", []byte("1\n")}, {"changed", []byte("22\n")}, {"new", []byte("4\n")}})
	for _, want := range []string{`section "changed"`, `no section "new"`, `stale section "stale"`} {
		found := false
		for _, p := range problems {
			found = found || strings.Contains(p, want)
		}
		if !found {
			t.Errorf("no problem mentions %s; problems: %q", want, problems)
		}
	}
	if len(problems) != 3 {
		t.Errorf("%d problems, want 3: %q", len(problems), problems)
	}
}
