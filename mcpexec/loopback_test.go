package mcpexec_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/polyloop/polyloop/mcpexec"
)

// freeRedirect returns a loopback redirect URL on a port free right now.
func freeRedirect(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr + "/callback"
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestLoopbackAuthorizerWaitsForTheBrowser: an authorization server that
// shows a login page gets the user sent to it (the URL is printed), and the
// code comes from the redirect the browser then makes to the loopback
// address.
func TestLoopbackAuthorizerWaitsForTheBrowser(t *testing.T) {
	t.Parallel()
	login := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("<form>log in</form>")) }))
	defer login.Close()
	redirect := freeRedirect(t)
	prompt := &syncBuffer{}
	authorize := mcpexec.LoopbackAuthorizer(redirect, prompt)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	go func() { // the user's browser, once the URL is printed
		for ctx.Err() == nil && !strings.Contains(prompt.String(), login.URL) {
			time.Sleep(5 * time.Millisecond)
		}
		resp, err := http.Get(redirect + "?code=c0de&state=st4te&iss=" + login.URL)
		if err == nil {
			resp.Body.Close()
		}
	}()
	res, err := authorize(ctx, login.URL+"/authorize?client_id=x")
	if err != nil {
		t.Fatal(err)
	}
	if res.Code != "c0de" || res.State != "st4te" || res.Iss != login.URL {
		t.Errorf("result %+v", res)
	}
	if !strings.Contains(prompt.String(), "open this URL") {
		t.Errorf("prompt: %q", prompt.String())
	}
}

// TestLoopbackAuthorizerTakesAnImmediateGrant: an authorization server that
// redirects at once is not waited for.
func TestLoopbackAuthorizerTakesAnImmediateGrant(t *testing.T) {
	t.Parallel()
	redirect := freeRedirect(t)
	as := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, redirect+"?code=at0nce&state="+r.URL.Query().Get("state"), http.StatusFound)
	}))
	defer as.Close()
	prompt := &syncBuffer{}
	res, err := mcpexec.LoopbackAuthorizer(redirect, prompt)(context.Background(), as.URL+"/authorize?state=s1")
	if err != nil || res.Code != "at0nce" || res.State != "s1" {
		t.Fatalf("result %+v, %v", res, err)
	}
	if prompt.String() != "" {
		t.Errorf("the user was prompted: %q", prompt.String())
	}
}

// TestLoopbackAuthorizerIsCancelled: no redirect ever comes; ctx ends it.
func TestLoopbackAuthorizerIsCancelled(t *testing.T) {
	t.Parallel()
	login := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer login.Close()
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	if _, err := mcpexec.LoopbackAuthorizer(freeRedirect(t), &syncBuffer{})(ctx, login.URL); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}
