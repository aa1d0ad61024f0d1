package providertest

import (
	"errors"
	"testing"

	"github.com/polyloop/polyloop/internal/provider"
)

// Run runs every shared test against the client h describes. It must not
// run in parallel: the secrets and end-to-end tests set the key's
// environment variable, and the contract kit's leak checks count the
// process's goroutines; those run first, the others then in parallel.
func Run[P provider.Package](t *testing.T, h Harness[P]) {
	if h.New == nil || len(h.APIErrors) == 0 || len(h.Replies) == 0 || len(h.Unreadable) == 0 || len(h.Failing) == 0 ||
		len(h.RejectedFields) == 0 || len(h.RateLimitedFields) == 0 || len(h.EndToEnd.Script) == 0 {
		t.Fatal("providertest: the Harness lacks New, API errors, replies, unreadable responses, failure modes, expected fields or an end-to-end run")
	}
	t.Run("Contract", func(t *testing.T) { TestContract(t, h, h.Failing) })
	t.Run("Secrets", func(t *testing.T) { TestSecrets(t, h, h.Rejected) })
	t.Run("EndToEnd", func(t *testing.T) { TestEndToEnd(t, h, h.EndToEnd) })
	t.Run("EndToEndFailure", func(t *testing.T) { TestEndToEndFailure(t, h, h.Rejected, h.RejectedFields) })
	parallel := map[string]func(t *testing.T){
		"Cancellation":       func(t *testing.T) { TestCancellation(t, h) },
		"ConnectionFailures": func(t *testing.T) { TestConnectionFailures(t, h) },
		"APIErrors":          func(t *testing.T) { CheckAPIErrors(t, h, h.APIErrors) },
		"Replies":            func(t *testing.T) { CheckReplies(t, h, h.Replies) },
		"RetryAfter":         func(t *testing.T) { CheckRetryAfterIsHonoured(t, h, h.RetryAfter150ms) },
		"ZeroRetries":        func(t *testing.T) { CheckZeroRetriesMeansOneAttempt(t, h, h.Overloaded) },
		"DiagFields":         func(t *testing.T) { CheckDiagFields(t, h, h.RateLimited, h.RateLimitedFields) },
		"Unreadable":         func(t *testing.T) { checkUnreadable(t, h) },
	}
	for name, test := range parallel {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t)
		})
	}
}

func checkUnreadable[P provider.Package](t *testing.T, h Harness[P]) {
	for fixture, cause := range h.Unreadable {
		t.Run(fixture, func(t *testing.T) {
			t.Parallel()
			err := CheckResponseError(t, h, fixture)
			if cause != nil && !errors.Is(err, cause) {
				t.Errorf("err = %v; want one caused by %v", err, cause)
			}
		})
	}
}
