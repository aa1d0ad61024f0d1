package mcpexec

import (
	"bytes"
	"io"
	"net/http"
)

// maxWatchedData bounds what of one server-sent event the watcher keeps to
// decode; a longer event is judged by its start (see signs.sawEvent).
const maxWatchedData = 64 << 10

// watchHTTP returns a client whose event-stream responses count the signs
// of the messages they carry as the SDK reads them; hc itself is not
// changed.
func watchHTTP(hc *http.Client, s *signs) *http.Client {
	return wrapBodies(hc, func(res *http.Response, mt string) {
		if mt == "text/event-stream" {
			res.Body = &sseWatch{ReadCloser: res.Body, signs: s}
		}
	})
}

// sseWatch follows a server-sent event stream as it is read, field by
// field as the SDK parses it (lines end with LF, a trailing CR is dropped,
// data lines are joined with LF, a blank line or the end of the stream
// ends an event), and counts the signs of each event's message.
type sseWatch struct {
	io.ReadCloser
	signs   *signs
	line    []byte // the current line, up to maxWatchedData bytes
	lineCut bool   // the current line lost bytes past the bound
	data    []byte // the current event's data, up to maxWatchedData bytes
	some    bool   // the current event has a data field
	cut     bool   // the current event's data lost bytes past the bound
}

func (w *sseWatch) Read(p []byte) (int, error) {
	n, err := w.ReadCloser.Read(p)
	w.feed(p[:n])
	if err != nil {
		w.endLine()
		w.endEvent()
	}
	return n, err
}

func (w *sseWatch) feed(b []byte) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			w.keep(b)
			return
		}
		w.keep(b[:i])
		w.endLine()
		b = b[i+1:]
	}
}

func (w *sseWatch) keep(b []byte) {
	if room := maxWatchedData - len(w.line); len(b) > room {
		b, w.lineCut = b[:room], true
	}
	w.line = append(w.line, b...)
}

func (w *sseWatch) endLine() {
	line, cut := bytes.TrimRight(w.line, "\r"), w.lineCut
	w.line, w.lineCut = w.line[:0], false
	if len(line) == 0 && !cut {
		w.endEvent()
		return
	}
	field, value, _ := bytes.Cut(line, []byte{':'})
	if !bytes.Equal(field, []byte("data")) {
		return
	}
	if w.some {
		w.data = append(w.data, '\n')
	}
	w.some = true
	w.cut = w.cut || cut
	value = bytes.TrimSpace(value)
	if room := maxWatchedData - len(w.data); len(value) > room {
		value, w.cut = value[:max(room, 0)], true
	}
	w.data = append(w.data, value...)
}

func (w *sseWatch) endEvent() {
	if w.some {
		w.signs.sawEvent(w.data, w.cut)
	}
	w.data, w.some, w.cut = w.data[:0], false, false
}
