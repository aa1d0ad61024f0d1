package mcpexec_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/mcpexec"
)

// The outside MCP peers (reference servers, a TypeScript-SDK server, the
// conformance suite) are npm packages pinned in testdata/npm. .ci/run
// installs them (npm ci) and sets npmDirEnv to that folder; nodeEnv names
// the node binary when the one on PATH is not the one to use.
const (
	npmDirEnv = "POLYLOOP_TEST_MCP_NPM"
	nodeEnv   = "POLYLOOP_TEST_NODE"
)

// npmDir returns the folder holding the installed packages, skipping the
// test when it is not configured.
func npmDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv(npmDirEnv)
	if dir == "" {
		t.Skipf("%s is not set: the npm MCP servers are not installed (.ci/run installs them)", npmDirEnv)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules")); err != nil {
		t.Fatalf("%s=%s: %v (run npm ci there)", npmDirEnv, dir, err)
	}
	return dir
}

func node() string {
	if n := os.Getenv(nodeEnv); n != "" {
		return n
	}
	return "node"
}

// npmServer starts a stdio server from an installed package's script. The
// marker, in its environment, lets serverPID find the process.
func npmServer(t *testing.T, script string, args []string, opts mcpexec.Options) (*mcpexec.Executor, string) {
	t.Helper()
	dir := npmDir(t)
	var b [8]byte
	_, _ = rand.Read(b[:])
	marker := "MCPEXEC_TEST_MARKER=" + hex.EncodeToString(b[:])
	opts.Command = append([]string{node(), filepath.Join(dir, script)}, args...)
	opts.Env = append(opts.Env, "PATH="+os.Getenv("PATH"), marker)
	var stderr bytes.Buffer
	opts.Stderr = &stderr
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e, err := mcpexec.New(ctx, opts)
	if err != nil {
		t.Fatalf("starting %s: %v", script, err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e, marker
}

// serverPID finds the process whose environment holds marker.
func serverPID(t *testing.T, marker string) int {
	t.Helper()
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		env, err := os.ReadFile(filepath.Join(d, "environ"))
		if err != nil || !bytes.Contains(env, []byte(marker+"\x00")) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(d))
		return pid
	}
	t.Fatalf("no process has %s", marker)
	return 0
}

const (
	filesystemScript = "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"
	everythingScript = "node_modules/@modelcontextprotocol/server-everything/dist/index.js"
	sideEffectScript = "side-effect-server.mjs"
)

func policies(e *mcpexec.Executor) map[string]polyloop.ReplayPolicy {
	m := map[string]polyloop.ReplayPolicy{}
	for _, s := range e.ToolSpecs() {
		m[s.Name] = s.Replay
	}
	return m
}

func TestServerFilesystem(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	text := strings.Repeat("the quick brown fox\n", 270) // 5,400 bytes
	if err := os.WriteFile(filepath.Join(root, "fox.txt"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	png := []byte("\x89PNG\r\n\x1a\n0123456789")
	if err := os.WriteFile(filepath.Join(root, "dot.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
	e, _ := npmServer(t, filesystemScript, []string{root}, mcpexec.Options{})

	t.Run("annotations give the replay policy", func(t *testing.T) {
		p := policies(e)
		for tool, want := range map[string]polyloop.ReplayPolicy{
			"read_text_file": polyloop.ReplaySafe,  // readOnlyHint
			"write_file":     polyloop.ReplaySafe,  // idempotentHint
			"edit_file":      polyloop.NeverReplay, // neither
			"move_file":      polyloop.NeverReplay,
		} {
			if p[tool] != want {
				t.Errorf("%s: replay %q, want %q", tool, p[tool], want)
			}
		}
	})
	t.Run("a successful call, its text once", func(t *testing.T) {
		out := execute(t, e, call("read_text_file", `{"path":"`+filepath.Join(root, "fox.txt")+`"}`))
		if out.Status != polyloop.Executed || out.Observation != text {
			t.Errorf("read_text_file: status %s, %d characters; want executed and the file's %d", out.Status, len(out.Observation), len(text))
		}
	})
	t.Run("an image is described, its structured copy left out", func(t *testing.T) {
		out := execute(t, e, call("read_media_file", `{"path":"`+filepath.Join(root, "dot.png")+`"}`))
		if out.Status != polyloop.Executed || out.Observation != "[image: image/png, 18 bytes]" {
			t.Errorf("read_media_file: %+v", out)
		}
	})
	t.Run("isError is executed", func(t *testing.T) {
		out := execute(t, e, call("read_text_file", `{"path":"/etc/hostname"}`))
		if out.Status != polyloop.Executed || !strings.Contains(out.Observation, "denied") {
			t.Errorf("outside the allowed directory: %+v, want executed with the server's refusal", out)
		}
	})
	t.Run("unknown tool", func(t *testing.T) {
		if out := execute(t, e, call("delete_everything", `{}`)); out.Status != polyloop.NotExecuted {
			t.Errorf("%+v, want not_executed", out)
		}
	})
	t.Run("bad arguments", func(t *testing.T) {
		if out := execute(t, e, call("read_text_file", `{"path":7}`)); out.Status != polyloop.NotExecuted {
			t.Errorf("%+v, want not_executed", out)
		}
		if out := execute(t, e, call("write_file", `{"path":"`+filepath.Join(root, "x")+`"}`)); out.Status != polyloop.NotExecuted {
			t.Errorf("missing content: %+v, want not_executed", out)
		}
		if _, err := os.Stat(filepath.Join(root, "x")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a refused write_file reached the server: %v", err)
		}
	})
}

func TestServerEverything(t *testing.T) {
	t.Parallel()
	e, marker := npmServer(t, everythingScript, []string{"stdio"}, mcpexec.Options{Prefix: "ev_"})

	t.Run("annotations give the replay policy", func(t *testing.T) {
		p := policies(e)
		if p["ev_echo"] != polyloop.ReplaySafe {
			t.Errorf("echo: %q, want replay_safe (readOnlyHint)", p["ev_echo"])
		}
		if p["ev_toggle-simulated-logging"] != polyloop.NeverReplay {
			t.Errorf("toggle-simulated-logging: %q, want never_replay", p["ev_toggle-simulated-logging"])
		}
	})
	t.Run("a successful call", func(t *testing.T) {
		out := execute(t, e, call("ev_echo", `{"message":"hello"}`))
		if out.Status != polyloop.Executed || out.Observation != "Echo: hello" {
			t.Errorf("echo: %+v", out)
		}
	})
	t.Run("structured content once", func(t *testing.T) {
		out := execute(t, e, call("ev_get-structured-content", `{"location":"New York"}`))
		if out.Status != polyloop.Executed || strings.Count(out.Observation, "temperature") != 1 {
			t.Errorf("get-structured-content: %+v, want the weather once", out)
		}
	})
	t.Run("bad arguments", func(t *testing.T) {
		if out := execute(t, e, call("ev_get-sum", `{"a":"one","b":2}`)); out.Status != polyloop.NotExecuted {
			t.Errorf("%+v, want not_executed", out)
		}
	})
	t.Run("unknown tool", func(t *testing.T) {
		if out := execute(t, e, call("echo", `{"message":"no prefix"}`)); out.Status != polyloop.NotExecuted {
			t.Errorf("%+v, want not_executed", out)
		}
	})
	t.Run("killed mid-call", func(t *testing.T) {
		pid := serverPID(t, marker)
		done := make(chan polyloop.ActionOutcome, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			out, err := e.Execute(ctx, call("ev_trigger-long-running-operation", `{"duration":30,"steps":30}`))
			if err != nil {
				out = polyloop.ActionOutcome{Observation: "error: " + err.Error()}
			}
			done <- out
		}()
		time.Sleep(500 * time.Millisecond) // not a timing assertion: the kill may land before or during the call
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if out := <-done; out.Status != polyloop.EnvError {
			t.Errorf("server killed during the call: %+v, want env_error", out)
		}
	})
}

// TestRefusedServerRequestMeansStarted: a tool that acts, then shows it —
// a request for input the client refuses (relaying the refusal, -32602, as
// the call's error), progress on the call's token, or a roots/list request
// the client answers — and then fails with -32602, has run: the outcome
// must not be NotExecuted. Both transports.
func TestRefusedServerRequestMeansStarted(t *testing.T) {
	t.Parallel()
	check := func(t *testing.T, e *mcpexec.Executor, log string) {
		want := ""
		for i, tool := range []string{"act", "progress_then_fail", "roots_then_fail"} {
			out := execute(t, e, call(tool, `{}`))
			if out.Status != polyloop.Executed {
				t.Errorf("%s: %+v, want executed (the tool had acted)", tool, out)
			}
			want += fmt.Sprintf("side effect #%d\n", i+1)
			if tool == "progress_then_fail" {
				want += "progress sent\n"
			}
		}
		if b, _ := os.ReadFile(log); string(b) != want {
			t.Errorf("the server's log: %q, want %q", b, want)
		}
		if out := execute(t, e, call("refuse", `{}`)); out.Status != polyloop.NotExecuted {
			t.Errorf("refuse: %+v, want not_executed (the server sent nothing during it)", out)
		}
	}
	t.Run("stdio", func(t *testing.T) {
		t.Parallel()
		log := filepath.Join(t.TempDir(), "effects")
		e, _ := npmServer(t, sideEffectScript, nil, mcpexec.Options{Env: []string{"SIDE_EFFECT_LOG=" + log}, Roots: []string{"file:///srv"}})
		check(t, e, log)
	})
	t.Run("streamable HTTP", func(t *testing.T) {
		t.Parallel()
		dir := npmDir(t)
		log := filepath.Join(t.TempDir(), "effects")
		cmd := exec.Command(node(), filepath.Join(dir, sideEffectScript), "--http")
		cmd.Env = append(os.Environ(), "SIDE_EFFECT_LOG="+log)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		url, err := bufio.NewReader(stdout).ReadString('\n')
		if err != nil {
			t.Fatalf("reading the server's URL: %v", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		e, err := mcpexec.New(ctx, mcpexec.Options{URL: strings.TrimSpace(url), Roots: []string{"file:///srv"}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.Close() })
		check(t, e, log)
	})
}
