package pgstore

import (
	"testing"

	"github.com/polyloop/polyloop/sweep/ledger/ledgertest"
)

func TestLedgerContract(t *testing.T) {
	dsn(t)
	ledgertest.TestLedger(t, func(t *testing.T) ledgertest.Store { return openT(t) })
}
