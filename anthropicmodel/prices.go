package anthropicmodel

import (
	_ "embed"

	"github.com/polyloop/polyloop/internal/pricing"
)

// PriceTable is a versioned price table (USD per million tokens), for
// Options.Prices.
type PriceTable = pricing.Table

// Price is one model's entry in a PriceTable.
type Price = pricing.Price

//go:embed prices.json
var pricesJSON []byte

var shippedPrices = pricing.Embed(pricesJSON)

// PriceTableVersion is the version of the price table shipped with the
// package.
const PriceTableVersion = "2026-11-01"

// DefaultPrices returns a copy of the price table shipped with the package,
// to extend or adjust and pass as Options.Prices (with a version of its
// own).
func DefaultPrices() (*PriceTable, error) { return shippedPrices.Copy() }
