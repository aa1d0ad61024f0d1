package anthropicmodel

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/anthropics/anthropic-sdk-go/v2/option"
)

// maxResponseBytes bounds the body of one response.
const maxResponseBytes = 32 << 20

// exchange is what one attempt saw on the wire, captured by a middleware so
// that failures are classified from facts rather than from the SDK's error
// values: the status and headers, the whole body, or the connection error.
type exchange struct {
	status  int
	header  http.Header
	body    []byte
	connErr error // no complete response (not set for cancellation)
	bodyErr error // a response too large to read
}

// middleware records the attempt into x and buffers the body, so that a body
// cut short is a connection failure of this attempt. callerCtx is the
// context of Complete: when it is done the failure is a cancellation, which
// Complete reports itself.
func (x *exchange) middleware(callerCtx context.Context) option.Middleware {
	return func(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		res, err := next(req)
		if err == nil {
			x.status, x.header = res.StatusCode, res.Header
			x.body, err = readAll(res.Body)
			if err == nil {
				res.Body = io.NopCloser(bytes.NewReader(x.body))
				return res, nil
			}
			if err == errTooLarge {
				x.bodyErr = err
				return nil, err
			}
		}
		if callerCtx.Err() == nil {
			if req.Context().Err() != nil {
				err = ErrAttemptTimeout
			}
			x.connErr = err
		}
		return nil, err
	}
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

// requestID is the server's id of the request, when it sent one.
func (x *exchange) requestID() string {
	if x.header == nil {
		return ""
	}
	return x.header.Get("request-id")
}
