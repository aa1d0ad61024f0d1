package mcpexec

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/oauth2"
)

// tokenCache keeps an OAuth token in a file, mode 0600. A cache that cannot
// be read or written is no cache: the flow runs again, nothing fails.
type tokenCache struct {
	mu   sync.Mutex
	path string
}

// load returns the cached token when it is still valid.
func (c *tokenCache) load() *oauth2.Token {
	c.mu.Lock()
	defer c.mu.Unlock()
	raw, err := os.ReadFile(c.path)
	if err != nil {
		return nil
	}
	var tok oauth2.Token
	if json.Unmarshal(raw, &tok) != nil || !tok.Valid() {
		return nil
	}
	return &tok
}

// store writes tok, replacing the file atomically.
func (c *tokenCache) store(tok *oauth2.Token) {
	c.mu.Lock()
	defer c.mu.Unlock()
	raw, err := json.Marshal(tok)
	if err != nil {
		return
	}
	if err := os.MkdirAll(filepath.Dir(c.path), 0o700); err != nil {
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(c.path), ".token-*")
	if err != nil {
		return
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(raw); err != nil || tmp.Close() != nil {
		return
	}
	_ = os.Rename(tmp.Name(), c.path)
}

// cachingSource writes each new token (a refresh) to the cache.
type cachingSource struct {
	base  oauth2.TokenSource
	cache *tokenCache
	mu    sync.Mutex
	last  string
}

func (s *cachingSource) Token() (*oauth2.Token, error) {
	tok, err := s.base.Token()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	changed := tok.AccessToken != s.last
	s.last = tok.AccessToken
	s.mu.Unlock()
	if changed {
		s.cache.store(tok)
	}
	return tok, nil
}
