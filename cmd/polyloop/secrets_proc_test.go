package main

import (
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The agent of the /proc test: a shell action and an MCP stdio server,
// both children of the driver, read it through /proc/$PPID as a
// prompt-injected model would have them do.
const peekAgent = `name: peeker
model:
  provider: script
  script:
    - {tool: bash, args: {command: "BIN/procpeek $PPID sk-hostile- pw-hostile-"}}
    - {tool: peek, args: {prefixes: [sk-hostile-, pw-hostile-]}}
    - {text: done}
limits: {max_steps: 4}
tools:
  shell: {dir: .}
  mcp:
    - {name: peek, command: BIN/mcppeek}
`

func secretValue(t *testing.T, prefix string) string {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return prefix + hex.EncodeToString(b)
}

// TestActionsCannotReadTheDriversSecrets: what a shell action and an MCP
// stdio server read of the driving process through /proc/$PPID — its
// environ, its cmdline, its memory — holds neither the API keys of its
// environment nor the password of its --store DSN; as root and as an
// ordinary user.
func TestActionsCannotReadTheDriversSecrets(t *testing.T) {
	t.Parallel()
	users := []asUser{currentUser(t)}
	if os.Getuid() == 0 {
		users = append(users, ordinaryUser(t))
	}
	for _, u := range users {
		t.Run(u.name, func(t *testing.T) {
			dir := t.TempDir()
			openToAll(t, dir)
			if err := os.Chmod(dir, 0o777); err != nil {
				t.Fatal(err)
			}
			agent := strings.ReplaceAll(peekAgent, "BIN", filepath.Dir(u.bin))
			if err := os.WriteFile(filepath.Join(dir, "agent.yaml"), []byte(agent), 0o644); err != nil {
				t.Fatal(err)
			}
			secrets := []string{secretValue(t, "sk-hostile-openai-"), secretValue(t, "sk-hostile-anthropic-")}
			store := "sqlite:" + filepath.Join(dir, "store", "runs.db")
			if base := os.Getenv("POLYLOOP_TEST_POSTGRES"); base != "" {
				// A password of its own, or any (trust authentication takes any).
				u, err := url.Parse(base)
				if err != nil || u.User == nil {
					t.Fatalf("POLYLOOP_TEST_POSTGRES %q: a postgres:// URL with a user is needed", base)
				}
				pw, ok := u.User.Password()
				if !ok {
					pw = secretValue(t, "pw-hostile-")
					u.User = url.UserPassword(u.User.Username(), pw)
				}
				secrets = append(secrets, pw)
				store = u.String()
			}
			env := []string{"OPENAI_API_KEY=" + secrets[0], "ANTHROPIC_API_KEY=" + secrets[1], "NO_COLOR=1"}
			id := "peek-" + u.name + "-" + secretValue(t, "")[:8]
			out, err := u.command(dir, env, "--store", store, "run", "agent.yaml", "task", "--id", id, "-q").CombinedOutput()
			if err != nil {
				t.Fatalf("run: %v\n%s", err, out)
			}
			log, err := u.command(dir, env, "--store", store, "export", id).CombinedOutput()
			if err != nil {
				t.Fatalf("export: %v\n%s", err, log)
			}
			if n := strings.Count(string(log), `"observation":"environ: `); n != 2 {
				t.Fatalf("the probes did not both run (%d reports):\n%s", n, log)
			}
			for _, s := range secrets {
				if i := strings.Index(string(log), s); i >= 0 {
					t.Errorf("an action read the secret %s of its driver: …%s…", s, log[max(0, i-300):min(len(log), i+100)])
				}
			}
		})
	}
}
