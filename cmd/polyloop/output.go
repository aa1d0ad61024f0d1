package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"

	"github.com/polyloop/polyloop/internal/costtext"
)

// writeJSON prints v as indented JSON, with &, < and > as they are: the
// output is for people and programs, not for an HTML page. Control
// characters are JSON escapes (jsonControls).
func writeJSON(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(jsonControls(buf.Bytes()))
	return err
}

// jsonControls writes the characters a terminal would obey (visible's
// hidden ones) that encoding/json leaves as they are — DEL, C1, the bidi
// controls — as \uNNNN escapes. They occur only inside JSON strings, and
// the escape decodes to the same character: the JSON means the same, and
// a terminal shows it instead of obeying it.
func jsonControls(b []byte) []byte {
	i := firstHidden(string(b))
	if i == len(b) {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	out = append(out, b[:i]...)
	for i < len(b) {
		r, n := utf8.DecodeRune(b[i:])
		if hidden(r) && r != utf8.RuneError {
			out = fmt.Appendf(out, `\u%04x`, r)
		} else {
			out = append(out, b[i:i+n]...)
		}
		i += n
	}
	return out
}

// Ways of saying a cost of which part may be unknown.
type costStyle struct {
	// decimals are the places a cost shows, more for a small one
	// (costtext.USD).
	decimals int
	// unknown is the text of a cost none of which is known.
	unknown string
	// partly follows the lower bound when some of the cost is unknown.
	partly string
}

var (
	// costShort is for tables: "$0.0012", "≥ $0.0012", "unknown".
	costShort = costStyle{decimals: 4, unknown: "unknown"}
	// costLong is for sentences: "≥ $0.001200 (some cost unknown)".
	costLong = costStyle{decimals: 6, unknown: "cost unknown", partly: " (some cost unknown)"}
	// costProgress is for the progress lines: "≥ $0.0012".
	costProgress = costStyle{decimals: 4, unknown: "cost unknown"}
)

// cost says a total: the sum when all of it is known, "cost unknown" when
// none is (no model call had a known cost, so the sum is not a cost at
// all), and the known part as a lower bound ("≥ $0.0012") when some is
// unknown: never as the cost. With no priced call the known part is zero,
// so unknown and known-zero parts cannot be told apart: a zero sum with an
// unknown part reads as unknown.
func (s costStyle) cost(usd float64, unknown bool) string {
	known := costtext.USD(usd, s.decimals)
	switch {
	case !unknown:
		return known
	case usd == 0:
		return s.unknown
	}
	return "≥ " + known + s.partly
}

// tokens says a token total as cost does a cost: "12 tokens", "≥ 12
// tokens" when some of it is unknown (a call of unknown outcome, a reply
// without usage), "tokens unknown" when none is known.
func tokens(n int64, unknown bool) string {
	switch {
	case !unknown:
		return strconv.FormatInt(n, 10) + " tokens"
	case n == 0:
		return "tokens unknown"
	}
	return "≥ " + strconv.FormatInt(n, 10) + " tokens"
}

// tokensCell is tokens for a table's cell: "12", "≥ 12", "unknown".
func tokensCell(n int64, unknown bool) string {
	switch {
	case !unknown:
		return strconv.FormatInt(n, 10)
	case n == 0:
		return "unknown"
	}
	return "≥ " + strconv.FormatInt(n, 10)
}
