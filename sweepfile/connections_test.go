package sweepfile

import (
	"testing"

	"github.com/polyloop/polyloop/agentfile"
	"github.com/polyloop/polyloop/sweep"
)

// An agent's model client keeps as many connections as the sweep has runs
// at once (the command's concurrency, else the file's, else the default),
// or its provider's max_connections when lower; the provider is its
// base_url when the providers section names it.
func TestConnections(t *testing.T) {
	t.Parallel()
	providers := map[string]ProviderSpec{"openai": {MaxConnections: 6}, "http://local/v1/": {MaxConnections: 2}, "anthropic": {}}
	for _, tc := range []struct {
		name        string
		file, flag  int
		model       agentfile.ModelSpec
		wantKey     string
		connections int
	}{
		{"the default concurrency", 0, 0, agentfile.ModelSpec{Provider: "anthropic"}, "anthropic", sweep.DefaultConcurrency},
		{"the file's", 16, 0, agentfile.ModelSpec{Provider: "anthropic"}, "anthropic", 16},
		{"the command's over the file's", 16, 3, agentfile.ModelSpec{Provider: "anthropic"}, "anthropic", 3},
		{"max_connections lower", 16, 0, agentfile.ModelSpec{Provider: "openai"}, "openai", 6},
		{"max_connections higher", 4, 0, agentfile.ModelSpec{Provider: "openai"}, "openai", 4},
		{"by base_url", 16, 0, agentfile.ModelSpec{Provider: "openai", BaseURL: "http://local/v1/"}, "http://local/v1/", 2},
		{"a base_url not named", 16, 0, agentfile.ModelSpec{Provider: "openai", BaseURL: "http://other/v1/"}, "openai", 6},
		{"a provider not named", 16, 0, agentfile.ModelSpec{Provider: "script"}, "script", 16},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := providerKey(tc.model, providers)
			got := connections(&File{Concurrency: tc.file}, &Options{Concurrency: tc.flag}, providers[key])
			if key != tc.wantKey || got != tc.connections {
				t.Errorf("provider %q with %d connections; want %q with %d", key, got, tc.wantKey, tc.connections)
			}
		})
	}
}

// The options given for the agent files reach them, with Connections set.
func TestAgentOptions(t *testing.T) {
	t.Parallel()
	getenv := func(string) string { return "x" }
	o := agentOptions(&Options{Agent: &agentfile.Options{Getenv: getenv, ShellDir: "/w", Connections: 99}}, 5)
	if o.Getenv == nil || o.ShellDir != "/w" || o.Connections != 5 {
		t.Errorf("agentOptions = %+v; want the caller's with Connections 5", o)
	}
	if o := agentOptions(nil, 3); o.Connections != 3 {
		t.Errorf("agentOptions(nil, 3).Connections = %d", o.Connections)
	}
}
