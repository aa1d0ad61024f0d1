package provider

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"sync/atomic"

	"github.com/polyloop/polyloop"
)

// maxResponseBytes bounds the body of one response; maxStreamBytes the
// events of one stream, which are read as they come and not kept (a long
// reply streams a few hundred bytes of events per token).
const (
	maxResponseBytes = 32 << 20
	maxStreamBytes   = 256 << 20
)

// Exchange is what one attempt saw on the wire, captured by Middleware so
// that failures are classified from facts rather than from the SDK's error
// values: the status and headers, the whole body, or the connection error.
// Caller.Call and Caller.Stream make one per attempt. A streamed attempt
// also delivers its deltas and reports its usage through it.
type Exchange struct {
	callerCtx       context.Context // the context of the call: done means cancellation
	timeoutErr      error           // the cause of an attempt that timed out
	requestIDHeader string

	status  int
	header  http.Header
	body    []byte
	connErr error // no complete response (not set for cancellation)
	bodyErr error // a response too large to read

	// What net/http's hooks (httptrace) saw of the request, from the
	// transport's goroutines: tried, that the middleware sent it on;
	// seeking, that the transport sought a connection (it reports its
	// writes); wrote, that it wrote the request in full.
	tried                 bool
	seeking, wroteRequest atomic.Bool

	// Of a streamed attempt (deltas is nil for Call's).
	attempt   int
	deltas    func(polyloop.Delta)
	delivered int             // deltas delivered
	usage     *polyloop.Usage // the usage the stream reported last
}

// Emit delivers a delta of this attempt, numbered with the attempt. It does
// nothing for an attempt of Caller.Call.
func (x *Exchange) Emit(d polyloop.Delta) {
	if x.deltas == nil {
		return
	}
	d.Attempt, d.Superseded = x.attempt, false
	x.delivered++
	x.deltas(d)
}

// Report records the usage the attempt's stream reported so far. Providers
// report running totals, so each report replaces the previous one.
func (x *Exchange) Report(u polyloop.Usage) { x.usage = &u }

// supersede announces that the attempt's deltas must be dropped, if it
// delivered any.
func (x *Exchange) supersede() {
	if x.delivered > 0 {
		x.deltas(polyloop.Delta{Attempt: x.attempt, Superseded: true})
	}
}

// Middleware records the attempt and buffers the body, so that a body cut
// short is a connection failure of this attempt. The success body of a
// streamed attempt is not buffered: it is handed over as it arrives, and a
// failure to read it is recorded as it happens. When the call's context is
// done the failure is a cancellation, which the Caller reports itself. It
// has the signature of both SDKs' option.Middleware.
func (x *Exchange) Middleware(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	x.tried = true
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		GetConn: func(string) { x.seeking.Store(true) },
		WroteRequest: func(w httptrace.WroteRequestInfo) {
			if w.Err == nil {
				x.wroteRequest.Store(true)
			}
		},
	}))
	res, err := next(req)
	if err == nil {
		x.status, x.header = res.StatusCode, res.Header
		if x.deltas != nil && res.StatusCode < 300 {
			res.Body = &streamBody{x: x, req: req, r: res.Body}
			return res, nil
		}
		x.body, err = readAll(res.Body)
		if err == nil {
			res.Body = io.NopCloser(bytes.NewReader(x.body))
			return res, nil
		}
		if errors.Is(err, errTooLarge) {
			x.bodyErr = err
			return nil, err
		}
	}
	x.failed(req, err)
	return nil, err
}

// failed records a failure to get the response or read its body as a
// connection failure: an attempt timeout when the attempt's context is
// done, nothing when the call's is (a cancellation).
func (x *Exchange) failed(req *http.Request, err error) {
	if x.callerCtx.Err() != nil {
		return
	}
	if req.Context().Err() != nil {
		err = x.timeoutErr
	}
	x.connErr = safeURLError(err)
}

// streamBody is the body of a streamed success: it records a read failure
// in the Exchange and bounds what is read to maxStreamBytes.
type streamBody struct {
	x    *Exchange
	req  *http.Request
	r    io.ReadCloser
	read int
}

func (b *streamBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.read += n
	switch {
	case b.read > maxStreamBytes:
		b.x.bodyErr = errStreamTooLarge
		return n, errStreamTooLarge
	case err != nil && !errors.Is(err, io.EOF) && b.x.connErr == nil:
		b.x.failed(b.req, err)
	}
	return n, err
}

func (b *streamBody) Close() error { return b.r.Close() }

// safeURLError redacts the URL an *url.Error names, as SafeBaseURL does: its
// text goes into diagnostics, and a query may hold a key.
func safeURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		ue.URL = safeURL(ue.URL)
	}
	return err
}

var (
	errTooLarge       = fmt.Errorf("response body exceeds %d bytes", maxResponseBytes)
	errStreamTooLarge = fmt.Errorf("stream exceeds %d bytes", maxStreamBytes)
)

func readAll(body io.ReadCloser) ([]byte, error) {
	defer body.Close()
	b, err := io.ReadAll(io.LimitReader(body, maxResponseBytes+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxResponseBytes {
		return nil, errTooLarge
	}
	return b, nil
}

// sent reports whether the attempt's request may have reached the server:
// a response arrived, or net/http wrote the request in full, or the
// transport is not one that reports its writes (it sought no connection
// through httptrace), so nothing says the request was not sent. A request
// the SDK refused, or that failed before it was written (a refused
// connection, a failed TLS handshake), was not sent.
func (x *Exchange) sent() bool {
	return x.status != 0 || x.wroteRequest.Load() || (x.tried && !x.seeking.Load())
}

// Status is the HTTP status of the response; 0 when none arrived.
func (x *Exchange) Status() int { return x.status }

// RequestID is the server's id of the request, when it sent one.
func (x *Exchange) RequestID() string {
	if x.header == nil {
		return ""
	}
	return x.header.Get(x.requestIDHeader)
}
