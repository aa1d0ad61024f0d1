// Package costtext says a cost in US dollars for people, one way for
// every command and page: never in scientific notation, and a small cost
// never as zero.
package costtext

import (
	"math"
	"strconv"
)

// SignificantDigits is how many significant digits USD keeps when it is
// given no fixed number of decimals (sums of float costs carry noise such
// as 0.00020899999999999998).
const SignificantDigits = 6

// minDigits is how many significant digits of a small cost USD shows at
// least, however few decimals it is asked for.
const minDigits = 2

// USD is v as "$0.0012": with decimals places, more when v is so small
// that fewer than two of its significant digits would show ($0.000014,
// not $0.0000). With decimals < 0 it is v to SignificantDigits
// significant digits with the trailing zeros dropped ($0.000084, $12.5).
// A zero is "$0" or "$0.0000", never a small cost.
func USD(v float64, decimals int) string {
	if decimals < 0 {
		rounded, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', SignificantDigits, 64), 64)
		return "$" + strconv.FormatFloat(rounded, 'f', -1, 64)
	}
	if v != 0 && !math.IsInf(v, 0) && !math.IsNaN(v) {
		// The first significant digit is at decimal place lead.
		lead := -int(math.Floor(math.Log10(math.Abs(v))))
		decimals = max(decimals, min(lead+minDigits-1, 20))
	}
	return "$" + strconv.FormatFloat(v, 'f', decimals, 64)
}
