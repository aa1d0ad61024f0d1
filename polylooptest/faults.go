package polylooptest

import (
	"errors"
	"fmt"

	"github.com/polyloop/polyloop"
)

// ErrInjected is the error of every fault the fakes inject; test for it with
// errors.Is.
var ErrInjected = errors.New("polylooptest: injected fault")

// ErrCrashed is returned by FaultyStore.Append after its simulated crash.
// errors.Is(ErrCrashed, ErrInjected) holds.
var ErrCrashed = fmt.Errorf("%w: store crashed", ErrInjected)

// describe is the snapshot identity of a wrapped seam, the same one the
// library would give it unwrapped, so that wrapping a seam in a fake does not
// change a run's snapshot hash.
func describe(v any) polyloop.Component {
	if d, ok := v.(polyloop.Describer); ok {
		return d.Describe()
	}
	return polyloop.Component{Name: fmt.Sprintf("%T", v)}
}
