package sweep

import "encoding/json"

// KnownCost is the sample's cost for a table: nil when none of it is known
// (CostUnknown with no known part: no model call had a known cost), so a
// sum over a column does not count an unknown cost as $0; else CostUSD, a
// lower bound when CostUnknown.
func (s Sample) KnownCost() *float64 {
	if s.CostUnknown && s.CostUSD == 0 {
		return nil
	}
	return &s.CostUSD
}

// KnownTokens is KnownCost for tokens.
func (s Sample) KnownTokens() *int64 {
	if s.TokensUnknown && s.Tokens == 0 {
		return nil
	}
	return &s.Tokens
}

// MarshalJSON writes a cost or token count none of which is known as
// null, as the CSV and Parquet tables leave it empty.
func (s Sample) MarshalJSON() ([]byte, error) {
	type plain Sample
	return json.Marshal(struct {
		plain
		Tokens  *int64   `json:"tokens"`
		CostUSD *float64 `json:"cost_usd"`
	}{plain(s), s.KnownTokens(), s.KnownCost()})
}
