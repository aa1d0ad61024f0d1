package trajectory

import "github.com/polyloop/polyloop"

// ClassifiedKinds are the record kinds Invocations knows how an
// uninterrupted invocation may begin a write with.
func ClassifiedKinds() map[polyloop.RecordKind]bool {
	out := map[polyloop.RecordKind]bool{}
	for k := range writeStarts {
		out[k] = true
	}
	return out
}
