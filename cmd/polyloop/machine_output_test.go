package main

import (
	"encoding/csv"
	"encoding/json"
	"strings"
	"testing"
)

// hostileText holds characters a terminal obeys: ESC, DEL, CR, a C1 (NEL)
// and a bidi override. The agent answers it; the scorer explains with it.
const hostileText = "ok\x1b]52;c;SGVsbG8=\a\x7f\r\u0085\u202eend"

const hostileSweepAgent = `name: hostile
model:
  provider: script
  script:
    - {text: "ok\e]52;c;SGVsbG8=\a\x7f\r\u0085\u202eend"}
limits: {max_steps: 2}
`

const hostileSweep = `name: hostile
agents: [hostile.yaml]
tasks: tasks.csv
scorers:
  - {name: cmd, kind: command, command: [sh, -c, 'printf ''{"score":1,"explanation":"ok\\u001b]52;c;SGVsbG8=\\u0007\\u007f\\r\\u0085\\u202eend"}''']}
`

// TestMachineOutputIsExact: what programs read (--json, --csv, export)
// carries outside text exactly as stored, not escaped for a terminal: a
// CSV cell byte for byte, a JSON string decoding to the same text. And
// the JSON has no raw control character a terminal would obey.
func TestMachineOutputIsExact(t *testing.T) {
	t.Parallel()
	c := newCLI(t, "")
	c.write("hostile.yaml", hostileSweepAgent)
	c.write("sweep.yaml", hostileSweep)
	c.write("tasks.csv", "id,input\nq1,say it\n")
	code, stdout, stderr := c.run("run", "hostile.yaml", hostileText, "--id", "h1", "--json")
	if code != exitOK {
		t.Fatalf("run: %d\n%s", code, stderr)
	}
	checkJSONText(t, "run --json", stdout, 1)
	code, stdout, stderr = c.run("sweep", "sweep.yaml", "--json")
	if code != exitOK {
		t.Fatalf("sweep: %d\n%s\n%s", code, stdout, stderr)
	}
	checkJSONText(t, "sweep --json", stdout, 0)
	for _, args := range [][]string{{"show", "h1", "--json"}, {"ls", "--json"}, {"export", "h1"}, {"samples", "--sweep", "hostile", "--json"}} {
		code, stdout, stderr := c.run(args...)
		if code != exitOK {
			t.Fatalf("%v: %d\n%s", args, code, stderr)
		}
		checkJSONText(t, strings.Join(args, " "), stdout, 1)
	}
	code, stdout, _ = c.run("samples", "--sweep", "hostile", "--csv")
	recs, err := csv.NewReader(strings.NewReader(stdout)).ReadAll()
	if code != exitOK || err != nil || len(recs) != 2 {
		t.Fatalf("samples --csv: %d %v\n%q", code, err, stdout)
	}
	found := false
	for i, col := range recs[0] {
		if col == "explanation_cmd" {
			found = recs[1][i] == hostileText
			if !found {
				t.Errorf("samples --csv explanation %q, want %q", recs[1][i], hostileText)
			}
		}
	}
	if !found && !t.Failed() {
		t.Errorf("samples --csv has no explanation_cmd column: %v", recs[0])
	}
}

// checkJSONText checks that the JSON values (a document, or one a line)
// in out hold hostileText at least min times, and that out holds no
// character a terminal would obey.
func checkJSONText(t *testing.T, what, out string, least int) {
	t.Helper()
	if i := firstHidden(strings.ReplaceAll(out, "\r\n", "\n")); i < len(out) {
		t.Errorf("%s: a raw control character at %d: %q", what, i, out[max(0, i-20):min(len(out), i+20)])
	}
	n := 0
	dec := json.NewDecoder(strings.NewReader(out))
	for {
		var v any
		if err := dec.Decode(&v); err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("%s: not JSON: %v\n%q", what, err, out)
			}
			break
		}
		n += countHostile(v)
	}
	if n < least {
		t.Errorf("%s: the text %q is found %d times, want ≥ %d:\n%q", what, hostileText, n, least, out)
	}
}

// countHostile counts the strings in v equal to or containing hostileText.
func countHostile(v any) int {
	switch v := v.(type) {
	case string:
		return strings.Count(v, hostileText)
	case []any:
		n := 0
		for _, e := range v {
			n += countHostile(e)
		}
		return n
	case map[string]any:
		n := 0
		for _, e := range v {
			n += countHostile(e)
		}
		return n
	}
	return 0
}
