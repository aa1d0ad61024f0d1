package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const envRunAgent = `name: files
model:
  provider: script
  script:
    - tool: bash
      args: {command: "echo one > /work/f1"}
    - tool: bash
      args: {command: "echo two > /work/f2"}
    - text: done
tools:
  shell: {dir: /work}
environment: {backend: bwrap, image: busybox, workdir: /work}
limits: {max_steps: 5}
`

// TestEnvForkExportDiff: a run with a sandbox, then a fork at step 1 with
// another step 2: the fork starts from step 1's environment (f1, not f2),
// env export writes the files a run left (at its end and at a step), and
// diff --files names the paths whose state differs.
func TestEnvForkExportDiff(t *testing.T) {
	images := os.Getenv("POLYLOOP_TEST_BWRAP_IMAGES")
	if images == "" {
		t.Skip("POLYLOOP_TEST_BWRAP_IMAGES is not set (.ci/env-images DIR builds the test image)")
	}
	t.Setenv("POLYLOOP_ENV_IMAGES", images)
	dir := t.TempDir()
	store := "sqlite:" + filepath.Join(dir, "p.db")
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a := write("a.yaml", envRunAgent)
	b := write("b.yaml", strings.Replace(envRunAgent, "echo two > /work/f2", "echo three > /work/f3 && cat /work/f1", 1))
	polyloopOut(t, "--store", store, "run", a, "write files", "--id", "r1", "-q")
	out := string(polyloopOut(t, "--store", store, "fork", "r1", "--at-step", "1", "--agent", b, "--id", "r2", "--json"))
	if !strings.Contains(out, `"completed"`) {
		t.Fatalf("fork: %s", out)
	}
	for _, tc := range []struct {
		run, step string
		want      []string
		not       string
	}{{"r1", "", []string{"f1", "f2"}, "f3"}, {"r2", "", []string{"f1", "f3"}, "f2"}, {"r1", "1", []string{"f1"}, "f2"}} {
		to := filepath.Join(t.TempDir(), "out")
		args := []string{"--store", store, "env", "export", tc.run, to}
		if tc.step != "" {
			args = append(args, "--step", tc.step)
		}
		polyloopOut(t, args...)
		for _, f := range tc.want {
			if _, err := os.Stat(filepath.Join(to, f)); err != nil {
				t.Errorf("export of %s (step %q): %v", tc.run, tc.step, err)
			}
		}
		if _, err := os.Stat(filepath.Join(to, tc.not)); err == nil {
			t.Errorf("export of %s (step %q) holds %s", tc.run, tc.step, tc.not)
		}
	}
	var stdout, stderr strings.Builder
	if code := execute([]string{"--store", store, "env", "export", "r1", filepath.Join(t.TempDir(), "x"), "--step", "99"}, strings.NewReader(""), &stdout, &stderr); code == 0 ||
		!strings.Contains(stderr.String(), "--step 99: run r1 has 3 steps") {
		t.Errorf("export at a step the run does not have: exit %d, %s", code, stderr.String())
	}
	stdout.Reset()
	stderr.Reset()
	execute([]string{"--store", store, "diff", "r1", "r2", "--files"}, strings.NewReader(""), &stdout, &stderr)
	got := stdout.String()
	if !strings.Contains(got, "files that differ between the environments: 2") || !strings.Contains(got, "only_a   /work/f2") || !strings.Contains(got, "only_b   /work/f3") {
		t.Fatalf("diff --files:\n%s\n%s", got, stderr.String())
	}
	// A run without an environment: said so, not every file only_a.
	plain := write("plain.yaml", "name: plain\nmodel: {provider: script, script: [{text: done}]}\n")
	polyloopOut(t, "--store", store, "run", plain, "nothing", "--id", "r3", "-q")
	stdout.Reset()
	stderr.Reset()
	execute([]string{"--store", store, "diff", "r1", "r3", "--files"}, strings.NewReader(""), &stdout, &stderr)
	if got := stdout.String(); !strings.Contains(got, "files: run r3 has no environment") || strings.Contains(got, "only_a") {
		t.Fatalf("diff --files with a run without an environment:\n%s\n%s", got, stderr.String())
	}

	// --step 0: the environment before the first action (no f1, no f2),
	// for export and for diff --files (the two runs' start alike).
	to := filepath.Join(t.TempDir(), "before")
	polyloopOut(t, "--store", store, "env", "export", "r1", to, "--step", "0")
	if entries, err := os.ReadDir(to); err != nil || len(entries) != 0 {
		t.Errorf("export --step 0 (before the first action): %v, %v; want an empty /work", entries, err)
	}
	stdout.Reset()
	stderr.Reset()
	execute([]string{"--store", store, "diff", "r1", "r2", "--files", "--step", "0"}, strings.NewReader(""), &stdout, &stderr)
	if got := stdout.String(); !strings.Contains(got, "files that differ between the environments: 0") {
		t.Errorf("diff --files --step 0:\n%s\n%s", got, stderr.String())
	}

	// --path names a file: refused, with DIR (a directory's files), not
	// an empty export.
	stdout.Reset()
	stderr.Reset()
	to = filepath.Join(t.TempDir(), "file")
	if code := execute([]string{"--store", store, "env", "export", "r1", to, "--path", "/work/f1"}, strings.NewReader(""), &stdout, &stderr); code == 0 ||
		!strings.Contains(stderr.String(), "--path /work/f1 is not a directory") {
		t.Errorf("export --path of a file into DIR: exit %d, %s", code, stderr.String())
	}
	// … and given as a tar stream of the file with DIR -.
	stdout.Reset()
	stderr.Reset()
	if code := execute([]string{"--store", store, "env", "export", "r1", "-", "--path", "/work/f1"}, strings.NewReader(""), &stdout, &stderr); code != 0 ||
		!strings.Contains(stdout.String(), "one") {
		t.Errorf("export --path of a file as a tar stream: exit %d, %q, %s", code, stdout.String(), stderr.String())
	}
}

// TestEnvImageMissing: a run whose image is not in the image directory
// fails saying so once, naming the variable that says where images are,
// and no placeholder run id.
func TestEnvImageMissing(t *testing.T) {
	images := os.Getenv("POLYLOOP_TEST_BWRAP_IMAGES")
	if images == "" {
		t.Skip("POLYLOOP_TEST_BWRAP_IMAGES is not set (.ci/env-images DIR builds the test image)")
	}
	t.Setenv("POLYLOOP_ENV_IMAGES", images)
	dir := t.TempDir()
	a := filepath.Join(dir, "a.yaml")
	if err := os.WriteFile(a, []byte(strings.Replace(envRunAgent, "image: busybox", "image: no-such-image", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr strings.Builder
	code := execute([]string{"--store", "sqlite:" + filepath.Join(dir, "p.db"), "run", a, "go", "--id", "r1"}, strings.NewReader(""), &stdout, &stderr)
	msg := stderr.String()
	if code == 0 || strings.Count(msg, "image not found") != 1 || strings.Contains(msg, `"describe"`) ||
		!strings.Contains(msg, "POLYLOOP_ENV_IMAGES") || !strings.Contains(msg, "no-such-image") || !strings.Contains(msg, images) {
		t.Errorf("run with a missing image: exit %d, stderr:\n%s", code, msg)
	}
}
