package otelsink

import (
	"encoding/json"
	"net/url"
	"strconv"

	"github.com/polyloop/polyloop"
)

// runFacts is what the sink keeps of a run's snapshot (from run_started,
// run_resumed and config_overridden) to describe the run's chat and
// execute_tool spans. It holds copies: nothing points into an event.
type runFacts struct {
	model modelParams
	// tools maps a tool's name to its description, for
	// gen_ai.tool.description.
	tools map[string]string
	// server is the model API's host, from the base_url of the model
	// client's Describe config; empty when the config has none.
	server endpoint
}

// modelParams is the sink's own copy of the model parameters in force.
type modelParams struct {
	provider, model   string
	temperature, topP *float64
	seed              *int64
	maxTokens         int
	stop              []string
}

// endpoint is a server.address and server.port; port 0 is unknown.
type endpoint struct {
	address string
	port    int
}

func factsOf(snap *polyloop.Snapshot) runFacts {
	f := runFacts{model: copyParams(snap.Model), server: serverOf(snap.ModelClient.Config)}
	for _, t := range snap.Tools {
		if t.Description != "" {
			if f.tools == nil {
				f.tools = map[string]string{}
			}
			f.tools[t.Name] = t.Description
		}
	}
	return f
}

func copyParams(p polyloop.ModelParams) modelParams {
	m := modelParams{provider: p.Provider, model: p.Model, maxTokens: p.MaxOutputTokens}
	if p.Temperature != nil {
		m.temperature = new(*p.Temperature)
	}
	if p.TopP != nil {
		m.topP = new(*p.TopP)
	}
	if p.Seed != nil {
		m.seed = new(*p.Seed)
	}
	m.stop = append([]string(nil), p.Stop...)
	return m
}

// serverOf reads the host and port of the "base_url" field of a model
// client's Describe config (openaimodel and anthropicmodel have one). Only
// the host and port are kept, never the user info, path or query. The port
// is the URL's, else the scheme's default (443 for https, 80 for http).
func serverOf(config json.RawMessage) endpoint {
	var c struct {
		BaseURL string `json:"base_url"`
	}
	if len(config) == 0 || json.Unmarshal(config, &c) != nil || c.BaseURL == "" {
		return endpoint{}
	}
	u, err := url.Parse(c.BaseURL)
	if err != nil || u.Hostname() == "" {
		return endpoint{}
	}
	e := endpoint{address: u.Hostname()}
	if p, err := strconv.Atoi(u.Port()); err == nil && p > 0 && p < 1<<16 {
		e.port = p
	} else if u.Port() == "" {
		e.port = defaultPorts[u.Scheme]
	}
	return e
}

var defaultPorts = map[string]int{"https": 443, "http": 80}
