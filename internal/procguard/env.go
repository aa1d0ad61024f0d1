package procguard

import (
	"errors"
	"strings"
)

// shown are the variables the kernel-visible environment keeps: what the
// Go runtime reads before main, and what says how to print — nothing that
// may be a credential.
var shown = map[string]bool{
	"PATH": true, "HOME": true, "USER": true, "LOGNAME": true, "SHELL": true, "PWD": true, "TMPDIR": true,
	"TERM": true, "COLORTERM": true, "NO_COLOR": true, "COLUMNS": true, "LINES": true, "TZ": true,
	"LANG": true, "LANGUAGE": true,
	"GODEBUG": true, "GOGC": true, "GOMEMLIMIT": true, "GOMAXPROCS": true, "GOTRACEBACK": true, "GORACE": true, "GOCOVERDIR": true,
}

// split divides an environment into the variables the kernel may show and
// the others.
func split(env []string) (visible, hidden []string) {
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if shown[k] || strings.HasPrefix(k, "LC_") {
			visible = append(visible, kv)
		} else {
			hidden = append(hidden, kv)
		}
	}
	return visible, hidden
}

func joinErr(a, b error) error { return errors.Join(a, b) }
