package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

func TestVisible(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, ünïcode, 漢字\n\tand tab": "plain text, ünïcode, 漢字\n\tand tab",
		"\x1b]52;c;SGVsbG8=\a":               `\x1b]52;c;SGVsbG8=\x07`,
		"line\r\x1b[2Kforged":                `line\r\x1b[2Kforged`,
		"c1 \u009b31m and del \x7f":          `c1 \u009b31m and del \x7f`,
		"bidi \u202eevil\u2066":              `bidi \u202eevil\u2066`,
		"bad utf-8 \xff\xfe":                 `bad utf-8 \xff\xfe`,
		"nul \x00":                           `nul \x00`,
	} {
		if got := visible(in); got != want {
			t.Errorf("visible(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzVisible: whatever the text, what visible writes holds no character
// a terminal obeys (but newline and tab), is valid UTF-8, leaves text
// without one as it is; and visibleWriter writes the same, however the
// text is cut into writes.
func FuzzVisible(f *testing.F) {
	f.Add("\x1b]52;c;SGVsbG8=\a", 3)
	f.Add("héllo \u009b wörld", 2)
	f.Add("漢字\xe6\xbc", 1)
	f.Fuzz(func(t *testing.T, s string, cut int) {
		out := visible(s)
		if !utf8.ValidString(out) {
			t.Fatalf("visible(%q) = %q: not UTF-8", s, out)
		}
		for _, r := range out {
			if hidden(r) {
				t.Fatalf("visible(%q) = %q holds %U", s, out, r)
			}
		}
		if firstHidden(s) == len(s) && out != s {
			t.Fatalf("visible(%q) = %q changed a text without controls", s, out)
		}
		var b bytes.Buffer
		w := &visibleWriter{w: &b}
		cut = min(max(cut, 0), len(s))
		w.Write([]byte(s[:cut]))
		w.Write([]byte(s[cut:]))
		w.Flush()
		if utf8.ValidString(s) && b.String() != out {
			t.Fatalf("visibleWriter cut at %d wrote %q, visible %q", cut, b.String(), out)
		}
		if !utf8.ValidString(b.String()) {
			t.Fatalf("visibleWriter wrote %q: not UTF-8", b.String())
		}
	})
}

const hostileAgent = `name: hostile
model:
  provider: script
  script:
    - {tool: bash, args: {command: "printf 'obs\\033]52;c;SGVsbG8=\\007\\r\\033[2Kforged'"}}
    - {text: "answer\e]52;c;SGVsbG8=\a\r\e[2Kforged"}
tools:
  shell: {dir: .}
`

// TestTerminalSeesNoControls: a model's and a command's control sequences
// reach run's progress lines, its answer line and show escaped; --raw
// writes show's text as it is.
func TestTerminalSeesNoControls(t *testing.T) {
	t.Parallel()
	u := currentUser(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "agent.yaml"), []byte(hostileAgent), 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"POLYLOOP_STORE=sqlite:" + filepath.Join(dir, "store.db"), "NO_COLOR=1"}
	outputs := map[string]func() ([]byte, error){
		"run": func() ([]byte, error) {
			return u.command(dir, env, "run", "agent.yaml", "task", "--id", "h1").CombinedOutput()
		},
		"show": func() ([]byte, error) { return u.command(dir, env, "show", "h1").CombinedOutput() },
		"ls":   func() ([]byte, error) { return u.command(dir, env, "ls").CombinedOutput() },
	}
	for _, name := range []string{"run", "show", "ls"} {
		out, err := outputs[name]()
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, out)
		}
		if bytes.ContainsAny(out, "\x1b\a\r") {
			t.Errorf("%s wrote control characters:\n%q", name, out)
		}
		if name != "ls" && !bytes.Contains(out, []byte(`\x1b]52;c;SGVsbG8=\x07\r\x1b[2Kforged`)) {
			t.Errorf("%s does not show the escapes:\n%s", name, out)
		}
	}
	out, err := u.command(dir, env, "--raw", "show", "h1").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "\x1b]52;c;SGVsbG8=\a") {
		t.Errorf("show --raw: %v; want the text as it is:\n%q", err, out)
	}
}

// TestVisibleWriterConcurrent writes from several goroutines at once, as a
// worker's runs and its own lines do: under -race an unserialized writer
// fails, and every line arrives whole.
func TestVisibleWriterConcurrent(t *testing.T) {
	var out strings.Builder
	v := &visibleWriter{w: &out}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				fmt.Fprintf(v, "goroutine %d line %d \x1b\n", g, i)
			}
		}(g)
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 800 {
		t.Fatalf("got %d lines, want 800", len(lines))
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "goroutine ") || !strings.HasSuffix(l, ` \x1b`) {
			t.Fatalf("line not whole: %q", l)
		}
	}
}
