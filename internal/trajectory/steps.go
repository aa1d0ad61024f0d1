package trajectory

import (
	"fmt"

	"github.com/polyloop/polyloop"
)

// StepCount is how many steps a run's trajectory holds, said the same way
// by every reader (ls, run, fork, diff, show, the view): a fork's copied
// steps are counted with its own and named, "3 (2 copied)"; another run's
// steps are "3".
func StepCount(t polyloop.Totals) string {
	if t.CopiedSteps > 0 {
		return fmt.Sprintf("%d (%d copied)", t.Steps+t.CopiedSteps, t.CopiedSteps)
	}
	return fmt.Sprint(t.Steps)
}

// StepsPhrase is StepCount in a sentence: "3 steps (2 copied)".
func StepsPhrase(t polyloop.Totals) string {
	if t.CopiedSteps > 0 {
		return fmt.Sprintf("%d steps (%d copied)", t.Steps+t.CopiedSteps, t.CopiedSteps)
	}
	return fmt.Sprintf("%d steps", t.Steps)
}
