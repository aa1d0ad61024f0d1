package main

import (
	"runtime/debug"
	"testing"
)

// The throughput setting applies unless the user set GOGC or GOMEMLIMIT.
func TestThroughputGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	if !throughputGC() || debug.SetGCPercent(100) != throughputGCPercent || debug.SetMemoryLimit(-1) != throughputMemLimit {
		t.Error("without GOGC and GOMEMLIMIT, the throughput GC setting was not applied")
	}
	t.Setenv("GOGC", "100")
	debug.SetGCPercent(100)
	if throughputGC() || debug.SetGCPercent(100) != 100 {
		t.Error("GOGC set by the user was overridden")
	}
}
