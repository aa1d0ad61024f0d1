package otelsink

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// DefaultServiceName is the service.name of NewFromEnv's traces unless
// OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES name another.
const DefaultServiceName = "polyloop"

// NewFromEnv builds a Sink exporting over OTLP/HTTP when the standard
// OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set
// and OTEL_SDK_DISABLED is not "true". The exporter reads the other standard
// OTEL_EXPORTER_OTLP_* variables (headers, timeout, compression, insecure)
// itself; headers are never logged or recorded.
//
// It returns the sink and a shutdown function that ends the sink's open
// spans (Close), then flushes and stops the exporter; call it before the
// process exits. When no endpoint is set it returns nil, nil, nil.
func NewFromEnv(ctx context.Context) (*Sink, func(context.Context) error, error) {
	if !exportConfigured() {
		return nil, nil, nil
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("otelsink: OTLP exporter: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName(DefaultServiceName)),
		resource.WithFromEnv(),
		resource.WithTelemetrySDK())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, nil, errors.Join(fmt.Errorf("otelsink: resource: %w", err), exp.Shutdown(ctx))
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	sink := New(Options{TracerProvider: tp})
	shutdown := func(ctx context.Context) error {
		sink.Close()
		return tp.Shutdown(ctx)
	}
	return sink, shutdown, nil
}

func exportConfigured() bool {
	if strings.EqualFold(strings.TrimSpace(os.Getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}
