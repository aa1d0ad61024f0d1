package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// collector is a fake OTLP/HTTP trace receiver that keeps span names.
type collector struct {
	mu    sync.Mutex
	spans []string
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req coltracepb.ExportTraceServiceRequest
	if proto.Unmarshal(body, &req) == nil {
		c.mu.Lock()
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, sp := range ss.Spans {
					c.spans = append(c.spans, sp.Name)
				}
			}
		}
		c.mu.Unlock()
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK)
}

func (c *collector) names() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.spans, ",")
}

// TestClosedStdoutKeepsTheRunAndItsTraces: `polyloop run … | head` whose
// reader is gone before the result is printed: the command neither dies of
// SIGPIPE nor loses the run's traces, and exits with the run's own code.
func TestClosedStdoutKeepsTheRunAndItsTraces(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath("polyloop")
	if err != nil {
		t.Fatalf("polyloop is not on PATH (TestMain installs it): %v", err)
	}
	col := &collector{}
	srv := httptest.NewServer(col)
	defer srv.Close()
	dir := t.TempDir()
	agent := filepath.Join(dir, "agent.yaml")
	if err := os.WriteFile(agent, []byte("name: piped\nmodel:\n  provider: script\n  script:\n    - {text: done}\nlimits: {max_steps: 3}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close() // the reader is gone: every write to stdout fails with EPIPE
	cmd := exec.Command(bin, "run", agent, "task", "--id", "piped-1")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "POLYLOOP_STORE=sqlite:"+filepath.Join(dir, "store.db"),
		"OTEL_EXPORTER_OTLP_ENDPOINT="+srv.URL, "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=")
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = w, &stderr
	err = cmd.Run()
	w.Close()
	if err != nil {
		t.Fatalf("run with a closed stdout: %v (%v)\nstderr:\n%s", err, cmd.ProcessState, stderr.String())
	}
	if got := col.names(); !strings.Contains(got, "invoke_agent piped") || !strings.Contains(got, "chat") {
		t.Errorf("the collector got spans %q; want the run's invoke_agent and chat spans", got)
	}
	c := &cli{t: t, dir: dir, bin: bin}
	if code, out, _ := c.run("show", "piped-1"); code != exitOK || !strings.Contains(out, "completed") {
		t.Errorf("show piped-1: exit %d:\n%s", code, out)
	}
}
