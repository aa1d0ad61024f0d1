package main

import (
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// commandOf is a shell line's command, without its comment, as fields.
func commandOf(line string) []string {
	cmd, _, _ := strings.Cut(line, "#")
	return strings.Fields(cmd)
}

func withoutFlags(fields []string) (args, flags []string) {
	for _, f := range fields {
		if strings.HasPrefix(f, "-") {
			flags = append(flags, f)
		} else {
			args = append(args, f)
		}
	}
	return args, flags
}

// TestReadmeCommandsAreCIs: the README opens with the demo and the test
// command; the test command works with Go alone (no -race, which needs a C
// compiler); .ci/run runs exactly that command with flags added.
func TestReadmeCommandsAreCIs(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile("(?s)```sh\n(.*?)```").FindSubmatch(readme)
	if block == nil {
		t.Fatal("README.md has no sh block")
	}
	lines := strings.Split(strings.TrimSpace(string(block[1])), "\n")
	if len(lines) < 2 || strings.Join(commandOf(lines[0]), " ") != "go run ./cmd/polyloop demo" {
		t.Fatalf("README.md's first command is %q, want the demo (go run ./cmd/polyloop demo)", lines[0])
	}
	test := commandOf(lines[1])
	if len(test) < 2 || test[0] != "go" || test[1] != "test" {
		t.Fatalf("README.md's second command is %q, want the test command", lines[1])
	}
	if slices.Contains(test, "-race") {
		t.Errorf("README.md's test command %q has -race, which needs a C compiler: CI adds it", lines[1])
	}
	ci, err := os.ReadFile("../../.ci/run")
	if err != nil {
		t.Fatal(err)
	}
	// Other go test lines of .ci/run run chosen tests (-run) of chosen
	// packages; the one over ./... is the README's.
	var runs [][]string
	for _, l := range strings.Split(string(ci), "\n") {
		if f := commandOf(l); len(f) >= 2 && f[0] == "go" && f[1] == "test" && slices.Contains(f, "./...") {
			runs = append(runs, f)
		}
	}
	if len(runs) != 1 {
		t.Fatalf(".ci/run runs go test over ./... %d times, want once: the README's test command with flags added", len(runs))
	}
	ciArgs, ciFlags := withoutFlags(runs[0])
	args, flags := withoutFlags(test)
	if !slices.Equal(ciArgs, args) {
		t.Errorf(".ci/run runs %q, README.md gives %q: the same command is wanted, with flags added", strings.Join(runs[0], " "), strings.Join(test, " "))
	}
	for _, f := range flags {
		if !slices.Contains(ciFlags, f) {
			t.Errorf(".ci/run's test command lacks README.md's flag %s", f)
		}
	}
}

// TestReadmeCommandLineMatchesTheProgram: every polyloop command (and
// subcommand) the README's command-line section shows exists, with the
// flags it names.
func TestReadmeCommandLineMatchesTheProgram(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	root := newRoot(&app{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard})
	flag := regexp.MustCompile(`--[a-z][a-z-]*`)
	seen := 0
	for _, line := range strings.Split(string(readme), "\n") {
		if !strings.HasPrefix(line, "polyloop ") {
			continue
		}
		seen++
		words := commandOf(line)
		cmd, _, err := root.Find(words[1:]) // the subcommand, if any
		if err != nil || cmd == root {
			t.Errorf("README.md shows %q, but polyloop has no command %q", line, words[1])
			continue
		}
		for _, f := range flag.FindAllString(line, -1) {
			name := strings.TrimPrefix(f, "--")
			if cmd.Flags().Lookup(name) == nil && cmd.InheritedFlags().Lookup(name) == nil && root.PersistentFlags().Lookup(name) == nil &&
				!(name == "version" && cmd.Name() == "version") {
				t.Errorf("README.md shows %s with %s, which it does not take:\n%s", cmd.Name(), f, line)
			}
		}
	}
	if seen < 8 {
		t.Fatalf("found %d polyloop command lines in README.md", seen)
	}
}
