package main

import (
	"encoding/json"
	"fmt"
	"io"
)

// writeJSON prints v as indented JSON, with &, < and > as they are: the
// output is for people and programs, not for an HTML page.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// Ways of saying a cost of which part may be unknown.
type costStyle struct {
	decimals int
	// partly follows the known part when some of the cost is unknown.
	partly string
}

var (
	// costShort is for tables: "$0.0012", "$0.0012+?", "unknown".
	costShort = costStyle{decimals: 4, partly: "+?"}
	// costLong is for sentences: "$0.001200 (some cost unknown)".
	costLong = costStyle{decimals: 6, partly: " (some cost unknown)"}
	// costProgress is for the progress lines: "$0.0012 + unknown".
	costProgress = costStyle{decimals: 4, partly: " + unknown"}
)

// cost says a total: the sum when all of it is known, "cost unknown" when
// none is (no model call had a known cost, so the sum is not a cost at
// all), and the known part marked when some is unknown. With no priced call
// the known part is zero, so unknown and known-zero parts cannot be told
// apart: a zero sum with an unknown part reads as unknown.
func (s costStyle) cost(usd float64, unknown bool) string {
	known := fmt.Sprintf("$%.*f", s.decimals, usd)
	switch {
	case !unknown:
		return known
	case usd == 0:
		if s == costShort {
			return "unknown"
		}
		return "cost unknown"
	}
	return known + s.partly
}
