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
	Name, ID, Data string
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

// read sends the events of r to out.
func read(r io.Reader, out chan<- Event) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	var cur Event
	var data []string
	for sc.Scan() {
		switch line := sc.Text(); {
		case line == "":
			cur.Data = strings.Join(data, "\n")
			out <- cur
			cur, data = Event{}, nil
		case strings.HasPrefix(line, "event: "):
			cur.Name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "id: "):
			cur.ID = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "data: "):
			data = append(data, strings.TrimPrefix(line, "data: "))
		}
	}
}
