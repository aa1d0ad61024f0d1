package provider

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestErrorTextsNameThePackage: each client's errors start with its package
// name, which comes from the type argument.
func TestErrorTextsNameThePackage(t *testing.T) {
	t.Parallel()
	cause := errors.New("reset")
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&APIError[testPkg]{StatusCode: 429, Type: "rate_limit", Code: "c", Message: "slow down", RequestID: "r1", Attempts: 3},
			"provider: HTTP 429 Too Many Requests (rate_limit, c): slow down [request r1] (after 3 attempts)"},
		{&APIError[testPkg]{StatusCode: 400, Code: "400"}, "provider: HTTP 400 Bad Request (400)"},
		{&ConnectionError[testPkg]{Err: cause, Attempts: 1}, "provider: connection failed: reset"},
		{&ResponseError[testPkg]{StatusCode: 200, RequestID: "r2", Err: cause, Attempts: 2},
			"provider: unreadable response (HTTP 200, request r2): reset (after 2 attempts)"},
	} {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
}

func TestClassifyWithoutAResponse(t *testing.T) {
	t.Parallel()
	errBad := errors.New("bad request")
	c := &Caller[testPkg]{Wire: Wire{ErrBadRequest: errBad}}
	sdkErr := errors.New("refused by the SDK")
	err := c.Classify(&Exchange{}, sdkErr)
	if !errors.Is(err, errBad) || !errors.Is(err, sdkErr) {
		t.Errorf("nothing sent: err = %v, want one wrapping ErrBadRequest and the SDK's error", err)
	}
	err = c.Classify(&Exchange{status: 200, bodyErr: errTooLarge}, sdkErr)
	var r *ResponseError[testPkg]
	if !errors.As(err, &r) || !errors.Is(err, errTooLarge) {
		t.Errorf("body too large: err = %v, want a *ResponseError caused by it", err)
	}
}

func TestCleanRedactsAndBounds(t *testing.T) {
	t.Parallel()
	c := &Caller[testPkg]{Settings: Settings{Key: "sk-secret"}}
	got := c.clean("key sk-secret rejected " + strings.Repeat("é", maxMessageBytes) + "\xff")
	if strings.Contains(got, "sk-secret") || !strings.Contains(got, "[REDACTED]") {
		t.Errorf("the key is not redacted: %.40q", got)
	}
	if len(got) > maxMessageBytes+len("…") || !strings.HasSuffix(got, "…") || !utf8.ValidString(got) {
		t.Errorf("not bounded to %d bytes of valid UTF-8: %d bytes", maxMessageBytes, len(got))
	}
	if redact("ab", "ab") != "ab" {
		t.Error("a key shorter than minRedactLen is redacted")
	}
}
