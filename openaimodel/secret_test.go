package openaimodel

import (
	"testing"

	"github.com/polyloop/polyloop/internal/providertest"
)

// secretKey is a made-up key: the tests prove it reaches the server and goes
// nowhere else.
const secretKey = providertest.SecretKey

// TestSecrets sets OPENAI_API_KEY: it is not parallel.
func TestSecrets(t *testing.T) {
	providertest.TestSecrets(t, harness, response{Status: 401, Fixture: "error_401.json"})
}
