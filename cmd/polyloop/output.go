package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
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
	known := fmt.Sprintf("$%.*f", s.decimals, usd)
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
