package mcpexec

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// signs counts the messages of the server that show a tool at work: every
// server-to-client request but ping (elicitation, sampling, roots: whether
// this client answers or refuses it) and every progress or logging
// notification. When one arrives while a call is in flight, the tool may
// have started, so a -32602 or -32601 answering the call cannot be
// NotExecuted. The count is per session, not per call (over stdio the
// protocol does not tie a request of the server to the call it serves), so
// a sign during concurrent calls marks them all as started: the safe
// direction.
//
// Messages are counted as they are read off the connection, before the SDK
// handles any of them: the SDK hands requests and notifications to their
// handlers on another goroutine but settles a call as soon as its answer is
// read, so a count kept by a handler could come after the answer to the
// call it concerns.
type signs struct {
	n atomic.Int64
}

// count reads the number of signs so far.
func (s *signs) count() int64 { return s.n.Load() }

// saw counts a message of the server with the given method ("" for a
// response).
func (s *signs) saw(method string) {
	if startedBy(method) {
		s.n.Add(1)
	}
}

// startedBy reports whether a message of the server with this method shows
// a tool at work.
func startedBy(method string) bool {
	switch method {
	case "", "ping":
		return false
	case "notifications/progress", "notifications/message":
		return true
	}
	return !strings.HasPrefix(method, "notifications/")
}

// sawEvent counts the JSON-RPC message (or batch) of one server-sent event.
// cut says that data is only the start of the event's data: then, as for
// data that does not decode, any "method" member counts, the safe
// direction.
func (s *signs) sawEvent(data []byte, cut bool) {
	data = bytes.TrimSpace(data)
	if !cut {
		var one struct {
			Method string `json:"method"`
		}
		if json.Unmarshal(data, &one) == nil {
			s.saw(one.Method)
			return
		}
		var batch []struct {
			Method string `json:"method"`
		}
		if json.Unmarshal(data, &batch) == nil {
			for _, m := range batch {
				s.saw(m.Method)
			}
			return
		}
	}
	if bytes.Contains(data, []byte(`"method"`)) {
		s.n.Add(1)
	}
}

// watchedTransport counts the signs of the messages its connections read.
// It suits every transport but the streamable HTTP client, whose connection
// the SDK must see as it is (see watchHTTP).
type watchedTransport struct {
	mcp.Transport
	signs *signs
}

func (t *watchedTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &watchedConn{Connection: c, signs: t.signs}, nil
}

type watchedConn struct {
	mcp.Connection
	signs *signs
}

// Read counts a request or notification as it is read, before the SDK
// handles it.
func (c *watchedConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if req, ok := msg.(*jsonrpc.Request); ok {
		c.signs.saw(req.Method)
	}
	return msg, err
}
