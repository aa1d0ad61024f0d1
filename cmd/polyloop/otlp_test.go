package main

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A trace collector that accepts connections and never answers must not hold
// the command at exit: the flush of traces is bounded (sinkShutdownTimeout).
// The bound checked here is loose (the export would otherwise wait for the
// OTLP exporter's own 10 s timeout, retried for 30 s or more); it is a hang
// check, not a measurement.
func TestSilentCollectorDoesNotHoldExit(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		var held []net.Conn
		for {
			c, err := ln.Accept()
			if err != nil {
				for _, h := range held {
					h.Close()
				}
				return
			}
			held = append(held, c) // read nothing, answer nothing
		}
	}()
	bin, err := exec.LookPath("polyloop")
	if err != nil {
		t.Fatalf("polyloop is not on PATH (TestMain installs it): %v", err)
	}
	dir := t.TempDir()
	agent := filepath.Join(dir, "agent.yaml")
	if err := os.WriteFile(agent, []byte("name: quiet\nmodel:\n  provider: script\n  script:\n    - {text: done}\nparser: {kind: toolcall}\nlimits: {max_steps: 3}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", agent, "task", "-q")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "POLYLOOP_STORE=sqlite:"+filepath.Join(dir, "store.db"),
		"OTEL_EXPORTER_OTLP_ENDPOINT=http://"+ln.Addr().String(), "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=")
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "completed") {
		t.Fatalf("output:\n%s", out)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("the command took %v to exit with a silent collector", d)
	}
}
