package provider

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
)

// maxResponseBytes bounds the body of one response.
const maxResponseBytes = 32 << 20

// Exchange is what one attempt saw on the wire, captured by Middleware so
// that failures are classified from facts rather than from the SDK's error
// values: the status and headers, the whole body, or the connection error.
// Caller.Call makes one per attempt.
type Exchange struct {
	callerCtx       context.Context // the context of the call: done means cancellation
	timeoutErr      error           // the cause of an attempt that timed out
	requestIDHeader string

	status  int
	header  http.Header
	body    []byte
	connErr error // no complete response (not set for cancellation)
	bodyErr error // a response too large to read
}

// Middleware records the attempt and buffers the body, so that a body cut
// short is a connection failure of this attempt. When the call's context is
// done the failure is a cancellation, which Caller.Call reports itself. It
// has the signature of both SDKs' option.Middleware.
func (x *Exchange) Middleware(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	res, err := next(req)
	if err == nil {
		x.status, x.header = res.StatusCode, res.Header
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
	if x.callerCtx.Err() == nil {
		if req.Context().Err() != nil {
			err = x.timeoutErr
		}
		x.connErr = safeURLError(err)
	}
	return nil, err
}

// safeURLError redacts the URL an *url.Error names, as SafeBaseURL does: its
// text goes into diagnostics, and a query may hold a key.
func safeURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		ue.URL = safeURL(ue.URL)
	}
	return err
}

var errTooLarge = fmt.Errorf("response body exceeds %d bytes", maxResponseBytes)

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

// Status is the HTTP status of the response; 0 when none arrived.
func (x *Exchange) Status() int { return x.status }

// RequestID is the server's id of the request, when it sent one.
func (x *Exchange) RequestID() string {
	if x.header == nil {
		return ""
	}
	return x.header.Get(x.requestIDHeader)
}
