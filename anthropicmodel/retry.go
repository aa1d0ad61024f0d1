package anthropicmodel

import "github.com/polyloop/polyloop/internal/provider"

// Defaults of the retry bounds in Options.
const (
	DefaultMaxBackoff    = provider.DefaultMaxBackoff
	DefaultMaxRetryAfter = provider.DefaultMaxRetryAfter
)
