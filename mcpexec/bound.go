package mcpexec

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/polyloop/polyloop"
)

// MaxMessageBytes bounds each message the executor reads from a server: a
// line over stdio (the SDK's own limit, mcp.DefaultMaxLineLength), and over
// streamable HTTP each JSON response body and each line of an event stream
// (a message is one "data:" line; an event of several lines is bounded by
// the SDK to maxEventBytes). A larger message is not read: the session is
// closed and the call is EnvError. Over Options.Transport the transport's
// own limits apply.
const MaxMessageBytes = mcp.DefaultMaxLineLength

// maxEventBytes is the SDK's bound on one server-sent event
// (StreamableClientTransport.MaxEventSize), above MaxMessageBytes so that a
// message of one line is refused by the executor's own bound first.
const maxEventBytes = 2 * MaxMessageBytes

// errMessageTooLarge is the read error of a response body beyond
// MaxMessageBytes.
var errMessageTooLarge = fmt.Errorf("mcpexec: a message from the server exceeds %d bytes (MaxMessageBytes)", MaxMessageBytes)

// oversize counts the responses refused for their size. The SDK does not
// wrap the read error it gets (its text is kept, not its identity), so an
// Execute that fails after the count changed knows why without reading
// error text. Like refusals, the count is per session: a session whose
// message was refused is closed, and every call then fails.
type oversize struct{ n atomic.Int64 }

func (o *oversize) count() int64 { return o.n.Load() }

// client returns a client whose responses are read to at most
// MaxMessageBytes, or for an event stream at most MaxMessageBytes a line;
// hc itself is not changed.
func (o *oversize) client(hc *http.Client) *http.Client {
	return wrapBodies(hc, func(res *http.Response, mt string) {
		res.Body = &boundedBody{r: res.Body, limit: MaxMessageBytes, left: MaxMessageBytes, lines: mt == "text/event-stream", big: o}
	})
}

// boundedBody fails a read past its limit rather than return a body cut
// short as if it were whole. For an event stream the limit is per line: it
// starts again after each line break. A read that crosses the limit returns
// only the bytes within it, then the error: the bytes after (the end of an
// oversized line above all) never reach the SDK.
type boundedBody struct {
	r      io.ReadCloser
	limit  int64 // MaxMessageBytes
	left   int64 // bytes the body (or the current line) may still have
	lines  bool
	big    *oversize
	failed bool
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.failed {
		return 0, errMessageTooLarge
	}
	n, err := b.r.Read(p)
	pos := 0 // the bytes of p[:n] counted so far
	for b.lines {
		i := bytes.IndexAny(p[pos:n], "\r\n")
		if i < 0 {
			break
		}
		if b.left < int64(i) {
			return pos + int(b.left), b.fail()
		}
		b.left, pos = b.limit, pos+i+1
	}
	if rest := int64(n - pos); b.left < rest {
		return pos + int(b.left), b.fail()
	}
	b.left -= int64(n - pos)
	return n, err
}

func (b *boundedBody) fail() error {
	b.failed = true
	b.big.n.Add(1)
	return errMessageTooLarge
}

func (b *boundedBody) Close() error { return b.r.Close() }

// noteRoom is the room left under polyloop.MaxObservationBytes for the
// truncation note.
const noteRoom = 64

// boundText keeps an observation as the log keeps it (polyloop.ValidText)
// and within polyloop.MaxObservationBytes: a longer text is cut at a
// character boundary, a last line "[output truncated: N characters
// dropped]" tells the model, and the characters dropped are returned.
func boundText(text string) (string, int) {
	text = polyloop.ValidText(text)
	if len(text) <= polyloop.MaxObservationBytes {
		return text, 0
	}
	cut := polyloop.MaxObservationBytes - noteRoom
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	dropped := utf8.RuneCountInString(text[cut:])
	return text[:cut] + fmt.Sprintf("\n[output truncated: %d characters dropped]", dropped), dropped
}
