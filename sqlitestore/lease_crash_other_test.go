//go:build unix && !linux

package sqlitestore

import "github.com/polyloop/polyloop"

// crashLease makes the holder of ls vanish as a killed process would:
// nothing is released (its descriptor is closed, its lock file stays).
func crashLease(ls polyloop.Lease) {
	l := ls.(*fileLease)
	l.set.remove(l)
	l.f.Close()
}
