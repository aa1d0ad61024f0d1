package shellexec_test

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/polyloop/polyloop/shellexec"
)

// TestBinaryOutputAsTheLogKeepsIt: bytes that are not UTF-8 come out as the
// log keeps them, so a resumed run reads back what the model saw live.
func TestBinaryOutputAsTheLogKeepsIt(t *testing.T) {
	t.Parallel()
	e := newExec(t, shellexec.Options{})
	out := execute(t, e, code(`printf 'ok \377\376 done'`))
	enc, err := json.Marshal(out.Observation)
	if err != nil {
		t.Fatal(err)
	}
	var back string
	if err := json.Unmarshal(enc, &back); err != nil {
		t.Fatal(err)
	}
	if !utf8.ValidString(out.Observation) || back != out.Observation || out.Observation != "ok \uFFFD\uFFFD done" {
		t.Errorf("observation %q reads back from the log as %q", out.Observation, back)
	}
}

func TestOutputLimitBounded(t *testing.T) {
	t.Parallel()
	_, err := shellexec.New(shellexec.Options{Dir: t.TempDir(), OutputLimit: shellexec.MaxOutputLimit + 1})
	if err == nil || !strings.Contains(err.Error(), "MaxOutputLimit") {
		t.Errorf("New with OutputLimit above the maximum: %v, want an error naming MaxOutputLimit", err)
	}
	if _, err := shellexec.New(shellexec.Options{Dir: t.TempDir(), OutputLimit: shellexec.MaxOutputLimit}); err != nil {
		t.Errorf("New with OutputLimit at the maximum: %v", err)
	}
}
