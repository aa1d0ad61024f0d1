package openaimodel

import (
	"testing"

	"github.com/polyloop/polyloop/internal/providertest"
)

func TestCancellation(t *testing.T) {
	t.Parallel()
	providertest.TestCancellation(t, harness)
}
