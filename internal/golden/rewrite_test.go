package golden

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

// setRewrite sets -rewrite for the rest of the test. Tests that call it are
// not parallel: the flag is global.
func setRewrite(t *testing.T) {
	t.Helper()
	if err := flag.Set("rewrite", "true"); err != nil {
		t.Fatalf("the test binary has no -rewrite flag: %v", err)
	}
	t.Cleanup(func() { _ = flag.Set("rewrite", "false") })
}

func TestCheckRewritesWithTheRewriteFlag(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.golden")
	if err := os.WriteFile(path, []byte("-- a --\nold\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	secs := []Section{{"a", []byte("new\n")}}
	setRewrite(t)
	if !Rewrite() {
		t.Fatal("Rewrite() = false with -rewrite set")
	}
	Check(t, path, secs)
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(format(secs)) {
		t.Fatalf("with -rewrite the file holds %q, want %q", got, format(secs))
	}
}

func TestFileRewritesWithTheRewriteFlag(t *testing.T) {
	path := filepath.Join(t.TempDir(), "body.json")
	setRewrite(t)
	File(t, path, []byte("{}\n"))
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "{}\n" {
		t.Fatalf("with -rewrite the file holds %q", got)
	}
}

func TestFileCompares(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "body.json")
	if err := os.WriteFile(path, []byte("{\"a\":1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	File(t, path, []byte("{\"a\":1}\n"))
	if got := fileProblem(path, []byte("{\"a\":2}\n")); got == "" {
		t.Fatal("a differing body gave no problem")
	}
	if got := fileProblem(filepath.Join(t.TempDir(), "missing.json"), nil); got == "" {
		t.Fatal("a missing file gave no problem")
	}
}
