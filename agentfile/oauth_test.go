package agentfile

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/sqlitestore"
)

// The credentials of the OAuth test: none of them may reach the store, an
// event or the snapshot.
const (
	oauthClientID     = "polyloop-test-client"
	oauthClientSecret = "cs-7d6c5b4a39281706f8e7d6c5"
	oauthAccessToken  = "at-4a3928170f6e8d7c6b5a4938"
	oauthRefreshToken = "rt-93827160f5e4d3c2b1a09f8e"
)

// oauthServer is an MCP server behind an OAuth 2.1 authorization server
// that grants at once: protected resource metadata, authorization server
// metadata, an authorization endpoint redirecting with a code, a token
// endpoint for the pre-registered client. tokens counts token requests.
func oauthServer(t *testing.T) (mcpURL string, tokens *atomic.Int32) {
	tokens = &atomic.Int32{}
	srv := mcp.NewServer(&mcp.Implementation{Name: "oauth-test", Version: "v1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "whoami", Description: "Says who.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "you, authorized"}}}, nil, nil
		})
	mux := http.NewServeMux()
	hs := httptest.NewServer(mux)
	t.Cleanup(hs.Close)
	base := hs.URL
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		if token != oauthAccessToken {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{Expiration: timeIn(3600)}, nil
	}
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	mux.Handle("/mcp", auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{
		ResourceMetadataURL: base + "/.well-known/oauth-protected-resource/mcp"})(mcpHandler))
	mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, map[string]any{"resource": base + "/mcp", "authorization_servers": []string{base}})
	})
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, map[string]any{"issuer": base, "authorization_endpoint": base + "/authorize", "token_endpoint": base + "/token",
			"response_types_supported": []string{"code"}, "code_challenge_methods_supported": []string{"S256"},
			"grant_types_supported": []string{"authorization_code"}, "token_endpoint_auth_methods_supported": []string{"client_secret_post"}})
	})
	mux.HandleFunc("/authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if q.Get("client_id") != oauthClientID {
			http.Error(w, "unknown client", http.StatusBadRequest)
			return
		}
		to := q.Get("redirect_uri") + "?" + url.Values{"code": {"the-code"}, "state": {q.Get("state")}}.Encode()
		http.Redirect(w, r, to, http.StatusFound)
	})
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		tokens.Add(1)
		if r.ParseForm() != nil || r.PostForm.Get("code") != "the-code" || r.PostForm.Get("client_secret") != oauthClientSecret {
			http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
			return
		}
		writeJSON(w, map[string]any{"access_token": oauthAccessToken, "token_type": "Bearer", "expires_in": 3600, "refresh_token": oauthRefreshToken})
	})
	return base + "/mcp", tokens
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// eventLog keeps every event, encoded.
type eventLog struct {
	mu  sync.Mutex
	all []string
}

func (l *eventLog) Emit(_ context.Context, e polyloop.Event) error {
	raw, err := json.Marshal(e)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all = append(l.all, string(raw))
	return err
}

// TestMCPOAuth runs an agent whose MCP server is behind OAuth, with a
// pre-registered client read from the environment and a token cache: the
// run calls the tool, and neither the client secret nor a token is in the
// store's files, the events or the snapshot; a second load reuses the
// cached token without asking for a new one.
func TestMCPOAuth(t *testing.T) {
	t.Parallel()
	mcpURL, tokens := oauthServer(t)
	dir := t.TempDir()
	src := "name: a\nmodel:\n  provider: script\n  script:\n    - {tool: whoami, args: {}}\n    - text: done\n" +
		"tools:\n  mcp:\n    - name: remote\n      url: " + mcpURL + "\n      oauth:\n" +
		"        client_id_env: REMOTE_CLIENT_ID\n        client_secret_env: REMOTE_CLIENT_SECRET\n" +
		"        redirect_url: http://127.0.0.1:1/callback\n        token_cache: tokens/remote.json\n"
	file := filepath.Join(dir, "agent.yaml")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"REMOTE_CLIENT_ID": oauthClientID, "REMOTE_CLIENT_SECRET": oauthClientSecret}
	opts := &Options{Getenv: func(k string) string { return env[k] }}

	cfg, err := Load(context.Background(), file, opts)
	if err != nil {
		t.Fatal(err)
	}
	dbPath := filepath.Join(dir, "runs.db")
	store, err := sqlitestore.Open(dbPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	events := &eventLog{}
	res, err := cfg.Runner(store, events).Run(context.Background(), "oauth-run", cfg.Agent, polyloop.Task{Input: "who am I?"})
	if err != nil {
		t.Fatal(err)
	}
	if res.StopReason != polyloop.StopCompleted {
		t.Fatalf("stop reason %s", res.StopReason)
	}
	log, err := polyloop.ReadLog(context.Background(), store, "oauth-run")
	if err != nil {
		t.Fatal(err)
	}
	_ = cfg.Close()
	_ = store.Close()
	encoded, err := json.Marshal(log)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(encoded), "you, authorized") {
		t.Fatalf("the tool's answer is not in the log: the call did not go through")
	}

	secrets := []string{oauthClientSecret, oauthAccessToken, oauthRefreshToken, "the-code"}
	files, _ := filepath.Glob(dbPath + "*") // the database, its WAL and shared memory, its leases
	for _, f := range files {
		if st, err := os.Stat(f); err == nil && st.IsDir() {
			continue // the lease files: a lock each, and empty
		}
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range secrets {
			if strings.Contains(string(raw), s) {
				t.Errorf("%s holds %q", filepath.Base(f), s)
			}
		}
	}
	for _, e := range events.all {
		for _, s := range secrets {
			if strings.Contains(e, s) {
				t.Errorf("an event holds %q: %s", s, e)
			}
		}
	}
	for _, s := range secrets {
		if strings.Contains(string(encoded), s) {
			t.Errorf("the log (with its snapshot) holds %q", s)
		}
	}

	cache := filepath.Join(dir, "tokens", "remote.json")
	info, err := os.Stat(cache)
	if err != nil {
		t.Fatalf("no token cache: %v", err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("the token cache has mode %v, want 0600", info.Mode().Perm())
	}
	before := tokens.Load()
	again, err := Load(context.Background(), file, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if out, err := again.Executor.Execute(context.Background(), polyloop.Action{Tool: "whoami", Args: json.RawMessage(`{}`)}); err != nil || out.Status != polyloop.Executed {
		t.Fatalf("with the cached token: %+v, %v", out, err)
	}
	if n := tokens.Load(); n != before {
		t.Errorf("the second load asked for %d new tokens, want the cached one used", n-before)
	}
}

func TestMCPOAuthIsChecked(t *testing.T) {
	t.Parallel()
	for name, tt := range map[string]struct{ oauth, want string }{
		"on a command":  {"command: srv\n      oauth: {client_id_env: X}", "oauth applies to a url"},
		"unknown grant": {"url: 'https://h/mcp'\n      oauth: {grant: password}", "expected authorization_code or client_credentials"},
		"cc without secret": {"url: 'https://h/mcp'\n      oauth: {grant: client_credentials, client_id_env: X}",
			"needs client_id_env and client_secret_env"},
		"secret without id": {"url: 'https://h/mcp'\n      oauth: {client_secret_env: X}", "set client_id_env too"},
		"not an env name":   {"url: 'https://h/mcp'\n      oauth: {client_id_env: 'my id'}", "expected the name of an environment variable"},
	} {
		_, err := Check(writeFile(t, "agent.yaml", scriptHead+"tools:\n  mcp:\n    - name: x\n      "+tt.oauth+"\n"))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want %q", name, err, tt.want)
		}
	}
}

func timeIn(seconds int) time.Time { return time.Now().Add(time.Duration(seconds) * time.Second) }
