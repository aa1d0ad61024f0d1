package mcpexec

import (
	"io"
	"strings"
	"testing"
)

// TestSSEWatchCountsSigns feeds event streams to the watcher in every
// split (one read per chunk of each size) and checks the signs counted.
func TestSSEWatchCountsSigns(t *testing.T) {
	progress := `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"polyloop-1","progress":1}}`
	response := `{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"bad"}}`
	big := strings.Repeat("x", maxWatchedData+10)
	for _, tc := range []struct {
		name, stream string
		want         int64
	}{
		{"progress then the answer", "event: message\nid: 1\ndata: " + progress + "\n\ndata: " + response + "\n\n", 1},
		{"the answer alone", "data: " + response + "\n\n", 0},
		{"a ping", `data: {"jsonrpc":"2.0","id":7,"method":"ping"}` + "\n\n", 0},
		{"a request", `data: {"jsonrpc":"2.0","id":8,"method":"roots/list"}` + "\n\n", 1},
		{"a list change is no sign", `data: {"jsonrpc":"2.0","method":"notifications/tools/list_changed"}` + "\n\n", 0},
		{"a log message", `data: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}` + "\n\n", 1},
		{"CRLF", "data: " + progress + "\r\n\r\n", 1},
		{"no space after the colon", "data:" + progress + "\n\n", 1},
		{"data on two lines", "data: " + progress[:40] + "\ndata: " + progress[40:] + "\n\n", 1},
		{"comments and other fields", ": keep-alive\nretry: 100\nevent: message\ndata: " + progress + "\n\n", 1},
		{"a batch", "data: [" + progress + "," + response + "]\n\n", 1},
		{"the last event ends with the stream", "data: " + response + "\n\ndata: " + progress, 1},
		{"a long request, judged by its start", `data: {"jsonrpc":"2.0","id":9,"method":"sampling/createMessage","params":{"x":"` + big + `"}}` + "\n\n", 1},
		{"a long answer", `data: {"jsonrpc":"2.0","id":9,"result":{"x":"` + big + `"}}` + "\n\n" + "data: " + response + "\n\n", 0},
		{"a long comment", ": " + big + "\ndata: " + response + "\n\n", 0},
	} {
		for _, size := range []int{1, 2, 7, 64, len(tc.stream)} {
			s := &signs{}
			w := &sseWatch{ReadCloser: io.NopCloser(&chunked{r: strings.NewReader(tc.stream), n: size}), signs: s}
			if _, err := io.Copy(io.Discard, w); err != nil {
				t.Fatal(err)
			}
			if got := s.count(); got != tc.want {
				t.Errorf("%s, read %d bytes at a time: %d signs, want %d", tc.name, size, got, tc.want)
			}
		}
	}
}
