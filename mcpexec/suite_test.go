package mcpexec_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// TestConformanceSuite runs every client scenario of the official MCP
// conformance suite (@modelcontextprotocol/conformance, pinned in
// testdata/npm; it needs Node.js 22 or later) against
// internal/conformanceclient, a client made of mcpexec.New and Execute. The
// suite fails on any failing scenario not in
// testdata/conformance-expected-failures.yml, and on any listed scenario
// that passes.
func TestConformanceSuite(t *testing.T) {
	dir := npmDir(t)
	client := filepath.Join(t.TempDir(), "conformanceclient")
	build := exec.Command("go", "build", "-o", client, "./internal/conformanceclient")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the conformance client: %v\n%s", err, out)
	}
	expected, err := filepath.Abs("testdata/conformance-expected-failures.yml")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	suite := exec.CommandContext(ctx, node(), filepath.Join(dir, "node_modules/@modelcontextprotocol/conformance/dist/index.js"),
		"client", "--command", client, "--suite", "all", "--expected-failures", expected, "--output-dir", t.TempDir())
	suite.Dir = t.TempDir()
	suite.Env = append(os.Environ(), "NO_COLOR=1")
	out, err := suite.CombinedOutput()
	if err != nil {
		t.Fatalf("the conformance suite: %v\n%s", err, out)
	}
	t.Logf("%s", tailLines(out, 40))
}

// tailLines returns the last n lines of b.
func tailLines(b []byte, n int) []byte {
	for i := len(b) - 2; i >= 0; i-- {
		if b[i] == '\n' {
			n--
			if n == 0 {
				return b[i+1:]
			}
		}
	}
	return b
}
