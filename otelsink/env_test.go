package otelsink_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/polyloop/polyloop/otelsink"
)

// These tests set environment variables, so they do not run in parallel.

func TestNewFromEnvUnset(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	sink, shutdown, err := otelsink.NewFromEnv(context.Background())
	if sink != nil || shutdown != nil || err != nil {
		t.Fatalf("NewFromEnv without endpoint = %v, %v, %v; want nil, nil, nil", sink, shutdown != nil, err)
	}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	t.Setenv("OTEL_SDK_DISABLED", "true")
	if sink, _, err := otelsink.NewFromEnv(context.Background()); sink != nil || err != nil {
		t.Fatalf("NewFromEnv with OTEL_SDK_DISABLED = %v, %v; want nil, nil", sink, err)
	}
}

func TestNewFromEnvRefusesOtherProtocols(t *testing.T) {
	t.Setenv("OTEL_SDK_DISABLED", "")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	tests := []struct {
		traces, general string
		refused         bool
	}{
		{"", "grpc", true},
		{"grpc", "", true},
		{"http/json", "", true},
		{"grpc", "http/protobuf", true}, // the traces variable wins
		{"http/protobuf", "grpc", false},
		{"", "HTTP/PROTOBUF", false},
		{"", "", false},
	}
	for _, tt := range tests {
		t.Setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", tt.traces)
		t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", tt.general)
		sink, shutdown, err := otelsink.NewFromEnv(context.Background())
		if got := errors.Is(err, otelsink.ErrUnsupportedProtocol); got != tt.refused {
			t.Errorf("traces %q, general %q: NewFromEnv error %v; refused = %v, want %v", tt.traces, tt.general, err, got, tt.refused)
		}
		if tt.refused && (sink != nil || shutdown != nil) {
			t.Errorf("traces %q, general %q: refused but returned a sink", tt.traces, tt.general)
		}
		if shutdown != nil {
			if err := shutdown(context.Background()); err != nil {
				t.Errorf("shutdown: %v", err)
			}
		}
	}
}

func TestNewFromEnvExportsOverOTLP(t *testing.T) {
	var mu sync.Mutex
	var paths, spans []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			t.Errorf("collector: %v", err)
		}
		mu.Lock()
		paths = append(paths, r.URL.Path)
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				for _, sp := range ss.Spans {
					spans = append(spans, sp.Name)
				}
			}
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	t.Setenv("OTEL_SDK_DISABLED", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")

	ctx := context.Background()
	sink, shutdown, err := otelsink.NewFromEnv(ctx)
	if err != nil || sink == nil {
		t.Fatalf("NewFromEnv: %v, %v", sink, err)
	}
	emitAll(t, ctx, sink, completedRun("run-otlp").evs)
	// An unfinished run too: shutdown must end and export its spans.
	emitAll(t, ctx, sink, newScript("run-open").started().modelCall(1, 1).evs)
	if err := shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(paths) == 0 || paths[0] != "/v1/traces" {
		t.Fatalf("collector got requests to %v; want /v1/traces", paths)
	}
	slices.Sort(spans)
	want := []string{"chat gpt-test", "chat gpt-test", "chat gpt-test", "execute_tool search",
		"invoke_agent researcher", "invoke_agent researcher", "run researcher", "run researcher"}
	if !slices.Equal(spans, want) {
		t.Errorf("collector got spans %v; want %v", spans, want)
	}
}
