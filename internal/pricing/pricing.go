// Package pricing holds the versioned price tables that the model clients
// ship with, and computes the cost of a call from its token counts.
//
// A table is plain JSON (see Table) embedded in each client package. Its
// Version goes into the run's snapshot through the client's Describe, so a
// run records which prices its costs were computed with. A model the table
// does not know has no price: Cost reports "unknown" (ok == false), never 0.
package pricing

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
	"sync"
)

// Table is a versioned list of prices, in US dollars per million tokens.
type Table struct {
	// Version names the table, e.g. "2026-11-01". It is required.
	Version string `json:"version"`
	// Source says where the prices come from, for people.
	Source string `json:"source,omitempty"`
	// Models maps a model id to its price. A dated id such as
	// "gpt-4o-2024-08-06" or "claude-sonnet-4-5-20250929" falls back to its
	// undated form when it has no entry of its own.
	Models map[string]Price `json:"models"`
}

// Price is the price of one model, in US dollars per million tokens.
type Price struct {
	// Input is the price of input tokens that are neither read from nor
	// written to a prompt cache.
	Input float64 `json:"input"`
	// Output is the price of output tokens (reasoning tokens included).
	Output float64 `json:"output"`
	// CachedInput is the price of input tokens read from a prompt cache;
	// nil means the same as Input.
	CachedInput *float64 `json:"cached_input,omitempty"`
	// CacheWrite is the price of input tokens written to a prompt cache; nil
	// means the same as Input.
	CacheWrite *float64 `json:"cache_write,omitempty"`
	// LongPrompt, when set, prices a whole call whose prompt — input, cache
	// reads and cache writes — exceeds its threshold (long-context tariffs).
	LongPrompt *LongPrompt `json:"long_prompt,omitempty"`
}

// LongPrompt is the tariff of calls with a long prompt.
type LongPrompt struct {
	// ThresholdTokens is the prompt size above which the tariff applies.
	ThresholdTokens int64 `json:"threshold_tokens"`
	// Price applies to every token of such a call. Nil means the table does
	// not know the tariff: the cost of such a call is unknown.
	Price *Price `json:"price,omitempty"`
}

// Tokens are the token counts of one call, in disjoint classes: Input counts
// only the input tokens that are neither cache reads nor cache writes.
type Tokens struct {
	Input       int64
	CachedInput int64
	CacheWrite  int64
	Output      int64
}

// Parse decodes and validates a table.
func Parse(data []byte) (*Table, error) {
	var t Table
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&t); err != nil {
		return nil, fmt.Errorf("pricing: decoding table: %w", err)
	}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	return &t, nil
}

// Validate reports a table without a version or with a negative or
// non-finite price.
func (t *Table) Validate() error {
	if t == nil {
		return errors.New("pricing: nil table")
	}
	if t.Version == "" {
		return errors.New("pricing: table has no version")
	}
	for model, p := range t.Models {
		if err := p.validate(); err != nil {
			return fmt.Errorf("pricing: table %s: model %q: %w", t.Version, model, err)
		}
		if lp := p.LongPrompt; lp != nil && lp.Price != nil {
			if lp.Price.LongPrompt != nil {
				return fmt.Errorf("pricing: table %s: model %q: a long-prompt price has a long-prompt price of its own", t.Version, model)
			}
			if err := lp.Price.validate(); err != nil {
				return fmt.Errorf("pricing: table %s: model %q (long prompt): %w", t.Version, model, err)
			}
		}
	}
	return nil
}

func (p Price) validate() error {
	for _, v := range []*float64{&p.Input, &p.Output, p.CachedInput, p.CacheWrite} {
		if v != nil && (*v < 0 || math.IsNaN(*v) || math.IsInf(*v, 0)) {
			return fmt.Errorf("invalid price %v", *v)
		}
	}
	if p.LongPrompt != nil && p.LongPrompt.ThresholdTokens <= 0 {
		return fmt.Errorf("long-prompt threshold %d is not positive", p.LongPrompt.ThresholdTokens)
	}
	return nil
}

// dateSuffix matches the date a provider appends to a model id.
var dateSuffix = regexp.MustCompile(`-(\d{4}-\d{2}-\d{2}|\d{8}|latest)$`)

// Lookup finds the price of a model: its exact id first, then the id without
// a trailing date ("-2024-08-06", "-20250929") or "-latest".
func (t *Table) Lookup(model string) (Price, bool) {
	if t == nil || model == "" {
		return Price{}, false
	}
	if p, ok := t.Models[model]; ok {
		return p, true
	}
	if base := dateSuffix.ReplaceAllString(model, ""); base != model {
		p, ok := t.Models[base]
		return p, ok
	}
	return Price{}, false
}

// Cost is the cost in US dollars of a call to model with the given tokens.
// ok is false when the table has no price for the model, or no tariff for a
// prompt this long: the cost is unknown, which is not the same as zero.
func (t *Table) Cost(model string, n Tokens) (usd float64, ok bool) {
	p, ok := t.Lookup(model)
	if !ok {
		return 0, false
	}
	if lp := p.LongPrompt; lp != nil && n.Input+n.CachedInput+n.CacheWrite > lp.ThresholdTokens {
		if lp.Price == nil {
			return 0, false
		}
		p = *lp.Price
	}
	cached, write := p.Input, p.Input
	if p.CachedInput != nil {
		cached = *p.CachedInput
	}
	if p.CacheWrite != nil {
		write = *p.CacheWrite
	}
	sum := float64(n.Input)*p.Input + float64(n.CachedInput)*cached +
		float64(n.CacheWrite)*write + float64(n.Output)*p.Output
	return sum / 1e6, true
}

// Embedded is a table that a client package embeds (its prices.json).
type Embedded struct {
	data   []byte
	shared func() (*Table, error)
}

// Embed returns the embedded table data, parsed when first asked for.
func Embed(data []byte) *Embedded {
	return &Embedded{data: data, shared: sync.OnceValues(func() (*Table, error) { return Parse(data) })}
}

// Shared returns the table, parsed once and shared by every caller: it must
// not be modified.
func (e *Embedded) Shared() (*Table, error) { return e.shared() }

// Copy returns a fresh copy of the table, to extend or adjust.
func (e *Embedded) Copy() (*Table, error) { return Parse(e.data) }
