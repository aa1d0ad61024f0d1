package polylooptest

import (
	"errors"
	"fmt"
)

// ErrInjected is the error of every fault the fakes inject; test for it with
// errors.Is.
var ErrInjected = errors.New("polylooptest: injected fault")

// ErrCrashed is returned by FaultyStore.Append after its simulated crash.
// errors.Is(ErrCrashed, ErrInjected) holds.
var ErrCrashed = fmt.Errorf("%w: store crashed", ErrInjected)
