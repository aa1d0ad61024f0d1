package provider

import (
	"net/url"
	"os"
	"reflect"
	"strings"
	"time"

	"github.com/polyloop/polyloop/internal/pricing"
)

// DefaultUnansweredToolResult is the result sent for a tool call that the
// history does not answer (see PairToolResults).
const DefaultUnansweredToolResult = "This tool call was not executed."

// Settings are the options every client has, as its Options gave them;
// Defaults fills in the ones left empty.
type Settings struct {
	// Key authenticates the client; the client keeps it only to redact it
	// from server texts. It is never described.
	Key                  string
	BaseURL              string
	Model                string
	UnansweredToolResult string
	Timeout              time.Duration // zero: DefaultTimeout; negative: none
	MaxBackoff           time.Duration
	MaxRetryAfter        time.Duration
	Prices               *pricing.Table

	// shipped: Prices is the client's shipped table (or a copy of it).
	shipped bool
}

// Defaults are a client's own default settings.
type Defaults struct {
	// KeyEnv is the environment variable read when Settings.Key is empty.
	KeyEnv string
	// ErrNoKey, when set, is returned when neither Settings.Key nor KeyEnv
	// gives a key; nil means the client works without one.
	ErrNoKey error
	BaseURL  string
	// Prices gives the price table shipped with the client. It prices the
	// calls only when Settings.BaseURL is on BaseURL's host (the provider's
	// own API): another server under the same wire format (a gateway, a
	// local server) charges its own prices, or none, so its costs are
	// unknown unless Settings.Prices gives a table.
	Prices func() (*pricing.Table, error)
}

// Defaults fills in the settings left empty and validates the price table.
func (s *Settings) Defaults(d Defaults) error {
	if s.Key == "" {
		s.Key = os.Getenv(d.KeyEnv)
	}
	if s.Key == "" && d.ErrNoKey != nil {
		return d.ErrNoKey
	}
	if s.BaseURL == "" {
		s.BaseURL = d.BaseURL
	}
	if s.UnansweredToolResult == "" {
		s.UnansweredToolResult = DefaultUnansweredToolResult
	}
	if s.Timeout == 0 {
		s.Timeout = DefaultTimeout
	}
	if s.MaxBackoff <= 0 {
		s.MaxBackoff = DefaultMaxBackoff
	}
	if s.MaxRetryAfter <= 0 {
		s.MaxRetryAfter = DefaultMaxRetryAfter
	}
	shipped, err := d.Prices()
	if err != nil {
		return err
	}
	if s.Prices == nil {
		if !SameHost(s.BaseURL, d.BaseURL) {
			return nil // not the provider's API: every cost unknown
		}
		s.Prices = shipped
	}
	s.shipped = s.Prices == shipped || (s.Prices.Version == shipped.Version && reflect.DeepEqual(s.Prices.Models, shipped.Models))
	return s.Prices.Validate()
}

// KnowsCost reports whether the price table prices the model a request
// naming requested is made with (requested, else Settings.Model): the
// client then knows the cost of its calls (polyloop.CostReporter). A call
// whose prompt exceeds a long-prompt threshold the table gives no tariff
// for still has an unknown cost.
func (s *Settings) KnowsCost(requested string) bool {
	_, ok := s.Prices.Lookup(s.ChooseModel(requested))
	return ok
}

// DescribedPrices are the prices Describe records: none for the shipped
// table (its version names it) or without a table; every model of a table
// of the caller's own, so that the snapshot holds the prices a run's costs
// and cost budget are computed with.
func (s *Settings) DescribedPrices() map[string]pricing.Price {
	if s.Prices == nil || s.shipped {
		return nil
	}
	return s.Prices.Models
}

// SameHost reports whether two URLs name the same host: the shipped
// prices apply only to a base URL on the provider's own host.
func SameHost(a, b string) bool {
	ua, errA := url.Parse(a)
	ub, errB := url.Parse(b)
	return errA == nil && errB == nil && ua.Hostname() != "" && strings.EqualFold(ua.Hostname(), ub.Hostname())
}

// NoPriceTable is what PriceTable says when no table prices the calls.
const NoPriceTable = "none (costs unknown)"

// PriceTable names the price table in force for Describe: its version, or
// NoPriceTable.
func (s *Settings) PriceTable() string {
	if s.Prices == nil {
		return NoPriceTable
	}
	return s.Prices.Version
}

// SafeBaseURL is the base URL as Describe and error texts may show it:
// without user info, with every query value replaced by "REDACTED" (the
// names stay: a gateway may take its key as ?api_key=...), and with the key
// redacted should it appear elsewhere. A URL that does not parse loses
// everything from its '?' on.
func (s *Settings) SafeBaseURL() string {
	return redact(safeURL(s.BaseURL), s.Key)
}

// RedactedValue replaces the values of a URL's query parameters.
const RedactedValue = "REDACTED"

func safeURL(raw string) string {
	p, err := url.Parse(raw)
	if err != nil {
		before, _, _ := strings.Cut(raw, "?")
		return before
	}
	p.User = nil
	if p.RawQuery != "" || p.ForceQuery {
		p.RawQuery = redactQuery(p.RawQuery)
	}
	return p.String()
}

// redactQuery keeps the parameter names of a raw query, in their order, and
// replaces each value by RedactedValue.
func redactQuery(q string) string {
	params := strings.Split(q, "&")
	for i, kv := range params {
		if name, _, ok := strings.Cut(kv, "="); ok {
			params[i] = name + "=" + RedactedValue
		}
	}
	return strings.Join(params, "&")
}

// ChooseModel is the model a request names, else Settings.Model; "" when
// neither names one.
func (s *Settings) ChooseModel(requested string) string {
	if requested != "" {
		return requested
	}
	return s.Model
}
