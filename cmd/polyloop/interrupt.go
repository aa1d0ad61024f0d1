package main

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/polyloop/polyloop/agentfile"
)

// loadFailed turns the error of loading the agent file into the command's
// outcome. An interruption while the agent's tools start (an MCP server
// that is slow to come up) is no fault of the file: the command says so and
// exits 130; no run was started or changed.
func (a *app) loadFailed(agentPath string, err error, interrupted bool) error {
	if interrupted && errors.Is(err, context.Canceled) {
		fmt.Fprintf(a.stderr, "interrupted while starting the tools of %s: no run was started or changed\n", agentPath)
		return &exitErr{code: exitInterrupted}
	}
	return err
}

// loadAgent loads an agent file, saying on standard error (unless quiet)
// what it starts — each MCP server, and when it is ready — since starting
// servers may take seconds before the run's first line.
func (a *app) loadAgent(ctx context.Context, path string, quiet bool) (*agentfile.Config, error) {
	var mu sync.Mutex
	opts := &agentfile.Options{Connections: 1, Progress: func(line string) {
		if quiet {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(a.stderr, "%s: %s\n", path, line)
	}, Environments: a.envProvider}
	return agentfile.Load(ctx, path, opts)
}
