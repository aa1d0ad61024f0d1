// Package envvars merges layers of environment variables. It imports
// nothing but the standard library's strings: the sandbox's init
// (bwrapenv/internal/sbinit) uses it, and starts before the packages of
// the driver's executable initialize.
package envvars

import "strings"

// Merge returns the variables of layers in order, a later NAME=value
// replacing an earlier one in place.
func Merge(layers ...[]string) []string {
	index := map[string]int{}
	var out []string
	for _, layer := range layers {
		for _, kv := range layer {
			name, _, _ := strings.Cut(kv, "=")
			if i, ok := index[name]; ok {
				out[i] = kv
				continue
			}
			index[name] = len(out)
			out = append(out, kv)
		}
	}
	return out
}
