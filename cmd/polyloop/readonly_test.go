package main

import (
	"bufio"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const finalAgent = `name: final
model:
  provider: script
  script:
    - {tool: bash, args: {command: "echo hello"}}
    - {text: "done"}
tools:
  shell: {dir: .}
`

// TestStorePrivateAndReadOnlyUse: run creates its store directory 0700
// and the file 0600; a store its owner shares (directory 0755, file 0644)
// can be read by an ordinary user who cannot write it or its directory —
// ls, show, export, verify, stats, view — and a store that needs a
// migration is refused by them, saying so.
func TestStorePrivateAndReadOnlyUse(t *testing.T) {
	t.Parallel()
	owner := currentUser(t)
	reader := ordinaryUser(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "agent.yaml"), []byte(finalAgent), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := "sqlite:" + filepath.Join(dir, "store", "runs.db")
	env := []string{"POLYLOOP_STORE=" + spec, "NO_COLOR=1"}
	if out, err := owner.command(dir, env, "run", "agent.yaml", "task", "--id", "r1").CombinedOutput(); err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	for p, want := range map[string]os.FileMode{filepath.Join(dir, "store"): 0o700, filepath.Join(dir, "store", "runs.db"): 0o600} {
		if st, err := os.Stat(p); err != nil || st.Mode().Perm() != want {
			t.Errorf("%s: %v, %v; want mode %v", p, st.Mode(), err, want)
		}
	}

	// The owner shares the store read-only.
	openToAll(t, filepath.Join(dir, "store"))
	share := func(p string) {
		if err := os.Chmod(p, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	share(filepath.Join(dir, "store", "runs.db"))
	if reader.cred == nil { // not root: the store's own user, without write permission
		if err := os.Chmod(filepath.Join(dir, "store", "runs.db"), 0o444); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(dir, "store"), 0o555); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(filepath.Join(dir, "store"), 0o755) })
	}
	for _, args := range [][]string{{"ls"}, {"show", "r1"}, {"export", "r1"}, {"verify", "--all"}, {"stats"}} {
		out, err := reader.command(dir, env, args...).CombinedOutput()
		if err != nil {
			t.Errorf("%s: %v as %s:\n%s", args, err, reader.name, out)
		}
	}
	viewAs(t, reader, dir, env, "r1")

	// A schema-5 store (testdata) needs a migration: read-only commands say so.
	old := filepath.Join(dir, "old")
	if err := os.Mkdir(old, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("../../sqlitestore/testdata/v5.db")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(old, "v5.db"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if reader.cred == nil {
		os.Chmod(filepath.Join(old, "v5.db"), 0o444)
	}
	oldEnv := []string{"POLYLOOP_STORE=sqlite:" + filepath.Join(old, "v5.db"), "NO_COLOR=1"}
	out, err := reader.command(dir, oldEnv, "ls").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "needs a migration, which a command that only reads does not do") {
		t.Errorf("ls on a store needing a migration: %v\n%s", err, out)
	}
}

// viewAs serves the store as u and reads run id's page.
func viewAs(t *testing.T, u asUser, dir string, env []string, id string) {
	t.Helper()
	cmd := u.command(dir, env, "view", "--addr", "127.0.0.1:0")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	go io.Copy(io.Discard, stdout)
	_, rest, ok := strings.Cut(line, " on http://")
	if err != nil || !ok {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("view as %s printed %q (%v); stderr:\n%s", u.name, line, err, stderr.String())
	}
	c := &http.Client{Timeout: 10 * time.Second}
	res, err := c.Get("http://" + strings.Fields(rest)[0] + "/run?id=" + id)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Errorf("view as %s: GET run: %s", u.name, res.Status)
	}
}
