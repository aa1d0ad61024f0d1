//go:build !linux

package polylooptest

// The broken environments wrap the sandbox backend, which runs on Linux.
func brokenEnvCases() []brokenCase { return nil }
