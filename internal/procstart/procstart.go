// Package procstart names a process across pid reuse: its pid and its
// start time, as the environment backends record their drivers.
package procstart

import (
	"os"
	"strconv"
	"strings"
)

// Of is the start time of process pid in clock ticks since boot (field 22
// of /proc/PID/stat), 0 when there is no such process.
func Of(pid int) uint64 {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(raw)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	fields := strings.Fields(s[i+1:])
	if len(fields) < 20 {
		return 0
	}
	v, _ := strconv.ParseUint(fields[19], 10, 64)
	return v
}

// Alive reports whether the process pid that started at start still runs.
func Alive(pid int, start uint64) bool {
	return pid > 0 && start != 0 && Of(pid) == start
}
