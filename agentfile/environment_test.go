package agentfile

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
)

const envAgent = `name: sandboxed
model:
  provider: script
  script:
    - text: done
tools:
  shell: {dir: /work}
environment:
  backend: bwrap
  image: busybox
  workdir: /work
  limits: {cpus: 0.5, memory_mb: 64, pids: 32}
  env_allow: [LANG]
  mounts: [{source: data, target: /data}]
  files:
    - {path: /work/a.txt, content: "hello"}
    - {path: /work/run.sh, from: run.sh, executable: true}
`

func writeAgent(t *testing.T, text string) string {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "agent.yaml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "run.sh"), []byte("echo run"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestEnvironmentSection: the section becomes the agent's environment
// spec, the shell runs inside it with restore_and_replay, and the
// backend's provider comes from Options.Environments.
func TestEnvironmentSection(t *testing.T) {
	p := writeAgent(t, envAgent)
	asked := ""
	cfg, err := Load(context.Background(), p, &Options{Environments: func(b string) (polyloop.EnvProvider, error) {
		asked = b
		return nil, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer cfg.Close()
	e := cfg.Agent.Environment
	if e == nil || e.Image != "busybox" || e.WorkDir != "/work" || e.Limits.MemoryBytes != 64<<20 || e.Limits.PIDs != 32 ||
		e.Network != polyloop.NetworkNone || len(e.HostEnv) != 1 || len(e.Files) != 2 || len(e.Mounts) != 1 {
		t.Fatalf("environment spec %+v", e)
	}
	if string(e.Files[1].Content) != "echo run" || e.Files[1].Mode != 0o755 || !filepath.IsAbs(e.Mounts[0].Source) {
		t.Fatalf("files %+v, mounts %+v", e.Files, e.Mounts)
	}
	if asked != "bwrap" || cfg.EnvBackend != "bwrap" {
		t.Fatalf("provider asked for %q, backend %q", asked, cfg.EnvBackend)
	}
	if len(cfg.Agent.Tools) != 1 || cfg.Agent.Tools[0].Replay != polyloop.RestoreAndReplay {
		t.Fatalf("tools %+v", cfg.Agent.Tools)
	}

	open := strings.Replace(envAgent, "  workdir: /work\n", "  workdir: /work\n  network: allow\n", 1)
	cfg2, err := Load(context.Background(), writeAgent(t, open), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cfg2.Close()
	if cfg2.Agent.Tools[0].Replay != polyloop.NeverReplay || cfg2.Agent.Environment.Network != polyloop.NetworkOpen {
		t.Fatalf("with network allow: replay %s, network %s", cfg2.Agent.Tools[0].Replay, cfg2.Agent.Environment.Network)
	}
}

// TestEnvironmentSectionRefused: each mistake is named at its key.
func TestEnvironmentSectionRefused(t *testing.T) {
	for _, tc := range []struct{ from, to, want string }{
		{"backend: bwrap", "backend: lxc", "environment.backend"},
		{"workdir: /work", "workdir: work", "environment.workdir"},
		{"shell: {dir: /work}", "shell: {dir: /work, env_allow: [HOME]}", "tools.shell.env_allow"},
		{"shell: {dir: /work}", "shell: {dir: work}", "tools.shell.dir"},
		{"  workdir: /work\n", "  workdir: /work\n  network: allow\n", ""},
	} {
		text := strings.Replace(envAgent, tc.from, tc.to, 1)
		if tc.want == "" {
			text = strings.Replace(text, "shell: {dir: /work}", "shell: {dir: /work, replay: restore_and_replay}", 1)
			tc.want = "tools.shell.replay"
		}
		_, err := Load(context.Background(), writeAgent(t, text), nil)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s → %s: %v, want a problem at %s", tc.from, tc.to, err, tc.want)
		}
	}
}

// TestEnvironmentMissingMountSource: a mount whose source does not exist
// is refused when the file loads, at the source's line and column, not at
// the run's first action after a model call.
func TestEnvironmentMissingMountSource(t *testing.T) {
	p := writeAgent(t, strings.Replace(envAgent, "source: data", "source: nonexist", 1))
	_, err := Load(context.Background(), p, nil)
	if err == nil || !strings.Contains(err.Error(), "agent.yaml:14:21:") || !strings.Contains(err.Error(), "environment.mounts[0].source") ||
		!strings.Contains(err.Error(), "cannot mount the host path") {
		t.Fatalf("load: %v", err)
	}
}
