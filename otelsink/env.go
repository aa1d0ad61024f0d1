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

// ErrUnsupportedProtocol is returned (wrapped) by NewFromEnv when
// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL or OTEL_EXPORTER_OTLP_PROTOCOL asks for
// a protocol other than http/protobuf.
var ErrUnsupportedProtocol = errors.New("otelsink: unsupported OTLP protocol")

// NewFromEnv builds a Sink exporting over OTLP/HTTP (protobuf) when the
// standard OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT)
// is set and OTEL_SDK_DISABLED is not "true". The exporter reads the other
// standard OTEL_EXPORTER_OTLP_* variables (headers, timeout, compression,
// insecure) itself; headers are never logged or recorded.
//
// Only the http/protobuf protocol is built in. When
// OTEL_EXPORTER_OTLP_TRACES_PROTOCOL (or, if that is unset,
// OTEL_EXPORTER_OTLP_PROTOCOL) names another — grpc, http/json — NewFromEnv
// returns an error wrapping ErrUnsupportedProtocol rather than sending
// OTLP/HTTP to an endpoint that expects something else. An application that
// needs gRPC builds its own TracerProvider with otlptracegrpc and passes it
// in Options.
//
// The provider's ids come from IDGenerator and the sink has RunRoot, so
// each run's trace has a real root span; the resource has host.name (with
// service.name and the OTEL_RESOURCE_ATTRIBUTES), which tells backends that
// the spans of one machine share its clock.
//
// It returns the sink and a shutdown function that ends the sink's open
// spans (Close), then flushes and stops the exporter; call it before the
// process exits. When no endpoint is set it returns nil, nil, nil.
func NewFromEnv(ctx context.Context) (*Sink, func(context.Context) error, error) {
	if !exportConfigured() {
		return nil, nil, nil
	}
	if err := checkProtocol(); err != nil {
		return nil, nil, err
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("otelsink: OTLP exporter: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName(DefaultServiceName)),
		resource.WithFromEnv(),
		resource.WithHost(),
		resource.WithTelemetrySDK())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, nil, errors.Join(fmt.Errorf("otelsink: resource: %w", err), exp.Shutdown(ctx))
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res),
		sdktrace.WithIDGenerator(IDGenerator(nil)))
	sink := New(Options{TracerProvider: tp, RunRoot: true})
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

// checkProtocol refuses an OTLP protocol other than http/protobuf, reading
// the traces-specific variable first, as the OpenTelemetry specification
// orders them.
func checkProtocol() error {
	for _, name := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		v := strings.TrimSpace(os.Getenv(name))
		if v == "" {
			continue
		}
		if strings.EqualFold(v, "http/protobuf") {
			return nil
		}
		return fmt.Errorf("%w: %s=%q; this build exports traces over OTLP/HTTP with protobuf only: set it to http/protobuf (and the endpoint to the collector's HTTP port, usually 4318) or unset it",
			ErrUnsupportedProtocol, name, v)
	}
	return nil
}
