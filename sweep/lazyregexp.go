package sweep

import (
	"regexp"
	"sync"
)

// lazyRegexp compiles expr on first use, so that a process that links this
// package but runs no sweep (polyloop run, resume) does not compile it at
// start. expr is a constant: MustCompile cannot fail on it but in a test.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}
