package main

import (
	"context"
	"errors"
	"fmt"
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
