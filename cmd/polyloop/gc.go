package main

import (
	"os"
	"runtime/debug"
)

// Garbage collection of the commands that run many runs at once (sweep,
// worker): their CPU per run is a fifth GC work at the default GOGC of
// 100 (docs/performance.md, issue 36), while their live heap is small.
// Unless the user set GOGC or GOMEMLIMIT, they collect when the heap has
// grown by throughputGCPercent, within a soft limit of throughputMemLimit
// (past which the runtime collects more often again).
const (
	throughputGCPercent = 400
	throughputMemLimit  = 1 << 30 // 1 GiB
)

// throughputGC applies the GC setting of the commands that run many runs
// at once. It reports whether it changed anything.
func throughputGC() bool {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return false
	}
	debug.SetGCPercent(throughputGCPercent)
	debug.SetMemoryLimit(throughputMemLimit)
	return true
}
