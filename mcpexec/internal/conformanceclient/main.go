// Command conformanceclient is the client the official MCP conformance
// suite (@modelcontextprotocol/conformance) runs for each of its client
// scenarios: `conformanceclient <server URL>`, with the scenario's name in
// MCP_CONFORMANCE_SCENARIO and its context (JSON) in MCP_CONFORMANCE_CONTEXT.
// It uses mcpexec as an agent would — New, then Execute — and nothing of
// the SDK directly, so that the suite judges mcpexec. It exits 1 when the
// scenario's calls fail.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/mcpexec"
)

// scenarios maps a scenario to the tool calls it expects after connecting
// (tool name and arguments); a scenario with no entry only connects and
// lists tools. Auth scenarios share one entry.
var scenarios = map[string][]call{
	"tools_call":                          {{"add_numbers", `{"a":5,"b":3}`}},
	"sse-retry":                           {{"test_reconnection", `{}`}},
	"elicitation-sep1034-client-defaults": {{"test_client_elicitation_defaults", `{}`}},
	"auth/":                               {{"test-tool", `{}`}},
}

type call struct{ tool, args string }

func main() {
	if len(os.Args) != 2 {
		fail(errors.New("usage: conformanceclient <server URL>"))
	}
	scenario := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	if err := run(ctx, os.Args[1], scenario, os.Getenv("MCP_CONFORMANCE_CONTEXT")); err != nil {
		fail(fmt.Errorf("scenario %q: %w", scenario, err))
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "conformanceclient:", err)
	os.Exit(1)
}

func run(ctx context.Context, url, scenario, rawContext string) error {
	opts := mcpexec.Options{URL: url}
	calls := scenarios[scenario]
	if strings.HasPrefix(scenario, "auth/") {
		h, err := oauthHandler(scenario, rawContext)
		if err != nil {
			return err
		}
		opts.OAuthHandler, calls = h, scenarios["auth/"]
	}
	e, err := mcpexec.New(ctx, opts)
	if err != nil {
		return err
	}
	defer e.Close()
	for i, c := range calls {
		out, err := e.Execute(ctx, polyloop.Action{CallID: fmt.Sprintf("c%d", i), Tool: c.tool, Args: json.RawMessage(c.args)})
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "%s: %s: %s\n", c.tool, out.Status, out.Observation)
		if out.Status != polyloop.Executed {
			return fmt.Errorf("%s: %s", c.tool, out.Status)
		}
	}
	return nil
}

// oauthHandler configures mcpexec's OAuth the way an agent file would: a
// pre-registered client when the scenario gives one, else a client ID
// metadata document or dynamic registration; the client_credentials grant
// where the scenario asks for it. The suite's authorization
// server grants at once, which mcpexec.LoopbackAuthorizer takes from its
// redirect.
func oauthHandler(scenario, rawContext string) (auth.OAuthHandler, error) {
	var c struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	if rawContext != "" {
		if err := json.Unmarshal([]byte(rawContext), &c); err != nil {
			return nil, fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %w", err)
		}
	}
	o := mcpexec.OAuth{ClientID: c.ClientID, ClientSecret: c.ClientSecret, RedirectURL: "http://localhost:3000/callback"}
	if scenario == "auth/client-credentials-basic" {
		o.Grant = mcpexec.GrantClientCredentials
	}
	if o.ClientID == "" {
		o.ClientMetadataURL = "https://conformance-test.local/client-metadata.json"
	}
	return mcpexec.NewOAuthHandler(o)
}
