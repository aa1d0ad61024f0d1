package main

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestUntarStaysInItsDirectory: an exported environment is what an agent
// left; a symlink it made, then a file through it, must not write outside
// the export's directory.
func TestUntarStaysInItsDirectory(t *testing.T) {
	outside := t.TempDir()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(tw.WriteHeader(&tar.Header{Name: "work/ok.txt", Typeflag: tar.TypeReg, Mode: 0o644, Size: 2}))
	_, err := tw.Write([]byte("ok"))
	must(err)
	must(tw.WriteHeader(&tar.Header{Name: "work/x", Typeflag: tar.TypeSymlink, Linkname: outside}))
	must(tw.WriteHeader(&tar.Header{Name: "work/x/planted", Typeflag: tar.TypeReg, Mode: 0o644, Size: 3}))
	_, err = tw.Write([]byte("bad"))
	must(err)
	must(tw.Close())

	dir := filepath.Join(t.TempDir(), "export")
	if err := untar(&buf, dir, "work"); err == nil {
		t.Error("untar wrote through a symlink the archive made")
	}
	if _, err := os.Stat(filepath.Join(outside, "planted")); err == nil {
		t.Fatal("a file was written outside the export's directory")
	}
	if b, err := os.ReadFile(filepath.Join(dir, "ok.txt")); err != nil || string(b) != "ok" {
		t.Errorf("ok.txt: %q, %v", b, err)
	}
}
