package main

import "github.com/polyloop/polyloop/agentfile"

// oneRun are the agent file options of a command that drives one run: its
// model calls go one at a time, so its model client keeps one connection
// (a sweep's and a worker's keep their concurrency: sweepfile.Options).
func oneRun() *agentfile.Options { return &agentfile.Options{Connections: 1} }
