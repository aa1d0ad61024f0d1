//go:build linux

package sqlitestore

import "github.com/polyloop/polyloop"

// crashLease makes the holder of ls vanish as a killed process would:
// nothing is released. An OFD lease's Store loses every lease it holds, as
// the process would (its lease file's descriptor is closed).
func crashLease(ls polyloop.Lease) {
	switch l := ls.(type) {
	case *fileLease:
		l.set.remove(l)
		l.f.Close()
	case *ofdLease:
		k := l.k
		k.mu.Lock()
		defer k.mu.Unlock()
		for _, h := range k.byRun {
			h.set.remove(h)
		}
		for _, h := range k.slots {
			h.set.remove(h)
		}
		if k.f != nil {
			k.f.Close()
		}
		k.f, k.byRun, k.byOff, k.slots = nil, nil, nil, nil
	}
}
