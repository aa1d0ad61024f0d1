package bench

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// The children start from a copy of this executable: same bytes, runnable.
func TestCopyExecutable(t *testing.T) {
	path, err := copyExecutable(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	src, err1 := os.ReadFile(exe)
	dst, err2 := os.ReadFile(path)
	if err1 != nil || err2 != nil || string(src) != string(dst) {
		t.Fatalf("copy %s differs from %s (%v, %v)", path, exe, err1, err2)
	}
	if filepath.Base(path) != filepath.Base(exe) {
		t.Errorf("copy %s is not named as %s", path, exe)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm()&0o100 == 0 {
		t.Errorf("copy is not executable: %v %v", fi.Mode(), err)
	}
	got, err := childExe(withChildExe(context.Background(), path))
	if err != nil || got != path {
		t.Errorf("childExe = %q, %v; want the copy %q", got, err, path)
	}
	if got, err := childExe(context.Background()); err != nil || got != exe {
		t.Errorf("childExe without a copy = %q, %v; want %q", got, err, exe)
	}
}
