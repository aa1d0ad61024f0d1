package mcpexec_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/mcpexec"
)

// bigOf asks the big tool for n copies of char.
func bigOf(char string, n int) polyloop.Action {
	return call("big", `{"char":"`+char+`","n":`+itoa(n)+`}`)
}

// executeBig is execute without a deadline: a large message under the
// race detector on a loaded machine takes what it takes.
func executeBig(t *testing.T, e *mcpexec.Executor, a polyloop.Action) (polyloop.ActionOutcome, error) {
	t.Helper()
	return e.Execute(t.Context(), a)
}

func itoa(n int) string {
	var b []byte
	for {
		b = append([]byte{byte('0' + n%10)}, b...)
		if n /= 10; n == 0 {
			return string(b)
		}
	}
}

// A result longer than polyloop.MaxObservationBytes is cut by the executor
// at a character boundary, with a note, and the characters dropped are
// counted in TruncatedChars.
func TestObservationIsBounded(t *testing.T) {
	t.Parallel()
	e := newInMemory(t, &serverState{}, mcpexec.Options{})
	out, err := executeBig(t, e, bigOf("é", 9<<19)) // 9 MiB
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != polyloop.Executed || len(out.Observation) > polyloop.MaxObservationBytes || !utf8.ValidString(out.Observation) {
		t.Fatalf("status %s, %d bytes (valid UTF-8: %v); want executed within %d bytes", out.Status, len(out.Observation), utf8.ValidString(out.Observation), polyloop.MaxObservationBytes)
	}
	kept, note, ok := strings.Cut(out.Observation, "\n[output truncated: ")
	if !ok || strings.Trim(kept, "é") != "" {
		t.Fatalf("no truncation note after the kept text: …%q", out.Observation[len(out.Observation)-80:])
	}
	if dropped := 9<<19 - utf8.RuneCountInString(kept); out.TruncatedChars != dropped || note != itoa(dropped)+" characters dropped]" {
		t.Errorf("TruncatedChars %d, note %q; want %d characters dropped", out.TruncatedChars, note, dropped)
	}
	if out := execute(t, e, bigOf("ab", 3)); out.Observation != "ababab" || out.TruncatedChars != 0 {
		t.Errorf("a short result: %+v", out)
	}
}

// A message from a streamable HTTP server larger than MaxMessageBytes is
// not read: the call is an env_error. The server answers with server-sent
// events, as it does by default (a JSON body is bounded the same way:
// TestBoundedBody).
func TestHTTPMessagesAreBounded(t *testing.T) {
	t.Parallel()
	srv := newTestServer(&serverState{})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer hs.Close()
	e, err := mcpexec.New(t.Context(), mcpexec.Options{URL: hs.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if out := execute(t, e, bigOf("s", 5)); out.Status != polyloop.Executed || out.Observation != "sssss" {
		t.Errorf("a small result: %+v", out)
	}
	out, err := executeBig(t, e, bigOf("x", mcpexec.MaxMessageBytes+1))
	if err != nil || out.Status != polyloop.EnvError {
		t.Errorf("a result beyond MaxMessageBytes: status %s (%d bytes), err %v; want env_error", out.Status, len(out.Observation), err)
	}
}

// Over stdio the SDK bounds a message to a line of MaxMessageBytes: a
// larger result is not read. Its error has no identity the executor can
// test (the SDK's is unexported), so Execute returns it: the action's
// outcome is unknown, as for any error outside the protocol.
func TestStdioMessagesAreBounded(t *testing.T) {
	t.Parallel()
	e := newSubprocess(t, "serve", mcpexec.Options{})
	t.Cleanup(func() { _ = e.Close() })
	out, err := executeBig(t, e, bigOf("x", mcpexec.MaxMessageBytes))
	if err == nil {
		t.Errorf("a result beyond MaxMessageBytes was read: status %s, %d bytes", out.Status, len(out.Observation))
	}
	if out := execute(t, e, bigOf("a", 1)); out.Status != polyloop.EnvError {
		t.Errorf("the next call on the session: %+v, want env_error (the session is closed)", out)
	}
}
