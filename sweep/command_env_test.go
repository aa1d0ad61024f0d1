package sweep

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/polyloop/polyloop/shellexec"
)

// TestCommandScorerEnvironment: the scorer command gets the shell tool's
// scrubbed environment — PATH, HOME (its directory), LANG — and the host
// variables its allow-list names; never the API keys or the store's DSN of
// the process that runs the sweep.
func TestCommandScorerEnvironment(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-scorer-must-not-see-this")
	t.Setenv("POLYLOOP_STORE", "postgres://u:secretpw@db/runs")
	t.Setenv("SCORER_DATA", "/data/answers")
	dir := t.TempDir()
	sc, err := Command("cmd", CommandOptions{Args: []string{"sh", "-c", "env > env.txt"}, Dir: dir, EnvAllow: []string{"SCORER_DATA"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sc.Score(context.Background(), completed("42", "42")); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "env.txt"))
	if err != nil {
		t.Fatal(err)
	}
	env := string(b)
	for _, secret := range []string{"sk-scorer-must-not-see-this", "secretpw", "OPENAI_API_KEY", "POLYLOOP_STORE"} {
		if strings.Contains(env, secret) {
			t.Errorf("the scorer's environment holds %q:\n%s", secret, env)
		}
	}
	for _, want := range []string{"SCORER_DATA=/data/answers\n", "HOME=" + dir + "\n", "PATH=" + shellexec.DefaultPath + "\n", "LANG=" + shellexec.DefaultLang + "\n"} {
		if !strings.Contains(env, want) {
			t.Errorf("the scorer's environment lacks %q:\n%s", want, env)
		}
	}
	plain, _ := Command("cmd", CommandOptions{Args: []string{"sh", "-c", "env > env.txt"}, Dir: dir})
	if plain.Version() == sc.Version() {
		t.Error("the allow-list does not enter the scorer's version")
	}
}
