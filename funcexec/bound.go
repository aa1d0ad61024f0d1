package funcexec

import (
	"fmt"
	"unicode/utf8"

	"github.com/polyloop/polyloop"
)

// noteRoom is the room left under polyloop.MaxObservationBytes for the
// truncation note.
const noteRoom = 64

// bound keeps an outcome's observation as the log keeps it (ValidText) and
// within polyloop.MaxObservationBytes: a longer text is cut at a character
// boundary, a last line "[output truncated: N characters dropped]" tells the
// model, and TruncatedChars counts the characters dropped.
func bound(o polyloop.ActionOutcome) polyloop.ActionOutcome {
	text := polyloop.ValidText(o.Observation)
	if len(text) <= polyloop.MaxObservationBytes {
		o.Observation = text
		return o
	}
	cut := polyloop.MaxObservationBytes - noteRoom
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	dropped := utf8.RuneCountInString(text[cut:])
	o.Observation = text[:cut] + fmt.Sprintf("\n[output truncated: %d characters dropped]", dropped)
	o.TruncatedChars += dropped
	return o
}
