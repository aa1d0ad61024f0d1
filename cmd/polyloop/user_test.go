package main

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// nobody is the ordinary user tests run polyloop as when they run as root.
const nobody = 65534

// asUser is how a test runs polyloop: the binary and, for another user
// than the test's, its credential.
type asUser struct {
	name string
	bin  string
	cred *syscall.Credential
}

// command is polyloop with args, run as u in dir with env added to the
// test's environment.
func (u asUser) command(dir string, env []string, args ...string) *exec.Cmd {
	cmd := exec.Command(u.bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if u.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: u.cred}
	}
	return cmd
}

// currentUser runs polyloop (the test binary TestMain installs on PATH)
// as the test's own user.
func currentUser(t *testing.T) asUser {
	t.Helper()
	bin, err := exec.LookPath("polyloop")
	if err != nil {
		t.Fatalf("polyloop is not on PATH (TestMain installs it): %v", err)
	}
	return asUser{name: "self", bin: bin}
}

// ordinaryUser runs polyloop as an ordinary user: the test's own when it
// is not root; otherwise nobody, running a copy of the test binary put
// where nobody can run it (the build directory is root's alone).
func ordinaryUser(t *testing.T) asUser {
	t.Helper()
	self := currentUser(t)
	if os.Getuid() != 0 {
		return self
	}
	dir, err := os.MkdirTemp("", "polyloop-bin-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"polyloop", "procpeek", "mcppeek"} { // the commands TestMain serves
		if err := copyExecutable(self.bin, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	return asUser{name: "nobody", bin: filepath.Join(dir, "polyloop"), cred: &syscall.Credential{Uid: nobody, Gid: nobody}}
}

// openToAll makes the directories of a test's temporary tree, from dir
// up to the temporary root, reachable by every user (t.TempDir makes them
// 0700).
func openToAll(t *testing.T, dir string) {
	t.Helper()
	root := filepath.Clean(os.TempDir())
	for d := filepath.Clean(dir); d != root && d != "/" && d != "."; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func copyExecutable(from, to string) error {
	if os.Link(from, to) == nil {
		return nil
	}
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}
