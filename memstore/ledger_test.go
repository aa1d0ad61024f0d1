package memstore_test

import (
	"testing"

	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/sweep/ledger/ledgertest"
)

func TestLedgerContract(t *testing.T) {
	t.Parallel()
	ledgertest.TestLedger(t, func(*testing.T) ledgertest.Store { return memstore.New() })
}
