// Package ssetest reads server-sent events for tests: the events of a
// stream as they come, each with its name, id and data (data lines joined
// with newlines, as a browser's EventSource joins them).
package ssetest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Event is one server-sent event.
type Event struct {
	// Name is the event type ("message" when the stream names none).
	Name string
	// ID is the id field the event itself carried ("" for none).
	ID string
	// LastID is the browser's last event ID once the event is dispatched:
	// the last id field seen so far in the stream, this event's or an
	// earlier one's (what a reconnecting EventSource sends as
	// Last-Event-ID).
	LastID string
	Data   string
}

// Open requests url and returns its events as they come; the channel is
// closed when the stream ends or ctx is done. A status other than 200 or a
// content type other than text/event-stream is an error.
func Open(ctx context.Context, url string) (<-chan Event, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		return nil, fmt.Errorf("GET %s: %d %s\n%s", url, res.StatusCode, res.Header.Get("Content-Type"), b)
	}
	out := make(chan Event, 1000)
	go func() {
		defer close(out)
		defer res.Body.Close()
		read(res.Body, out)
	}()
	return out, nil
}

// Read returns every event of r, parsed as the HTML standard's
// EventSource parses a stream.
func Read(r io.Reader) []Event {
	out := make(chan Event)
	go func() {
		defer close(out)
		read(r, out)
	}()
	var events []Event
	for e := range out {
		events = append(events, e)
	}
	return events
}

// read sends the events of r to out, as the HTML standard's event stream
// interpretation reads them: lines end at CRLF, LF or a lone CR; a field's
// name ends at the first colon, and one space after it is dropped; a
// comment starts with a colon; an id holding NUL is ignored; an event with
// no data is not dispatched; the last event ID outlives its event.
func read(r io.Reader, out chan<- Event) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	sc.Split(scanLines)
	var name, id, lastID string
	var data strings.Builder
	hasID := false
	first := true
	for sc.Scan() {
		line := sc.Text()
		if first {
			line, first = strings.TrimPrefix(line, "\uFEFF"), false
		}
		if line == "" {
			if data.Len() > 0 {
				if hasID {
					lastID = id
				}
				ev := Event{Name: name, LastID: lastID, Data: strings.TrimSuffix(data.String(), "\n")}
				if hasID {
					ev.ID = id
				}
				if ev.Name == "" {
					ev.Name = "message"
				}
				out <- ev
			}
			name, id, hasID = "", "", false
			data.Reset()
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			name = value
		case "data":
			data.WriteString(value + "\n")
		case "id":
			if !strings.ContainsRune(value, 0) {
				id, hasID = value, true
			}
		}
	}
}

// scanLines splits at CRLF, LF or a lone CR.
func scanLines(b []byte, atEOF bool) (int, []byte, error) {
	for i, c := range b {
		switch c {
		case '\n':
			return i + 1, b[:i], nil
		case '\r':
			if i+1 == len(b) && !atEOF {
				return 0, nil, nil // a LF may follow
			}
			if i+1 < len(b) && b[i+1] == '\n' {
				return i + 2, b[:i], nil
			}
			return i + 1, b[:i], nil
		}
	}
	if atEOF && len(b) > 0 {
		return len(b), b, nil
	}
	return 0, nil, nil
}
