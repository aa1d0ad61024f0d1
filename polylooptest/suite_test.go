package polylooptest

import (
	"testing"

	"github.com/polyloop/polyloop"
)

func TestGoodModelClientPasses(t *testing.T) { TestModelClient(t, goodModelHarness()) }
func TestGoodParserPasses(t *testing.T)      { TestDecisionParser(t, goodParserHarness()) }
func TestGoodExecutorPasses(t *testing.T)    { TestActionExecutor(t, goodExecutorHarness()) }
func TestGoodStorePasses(t *testing.T)       { TestStore(t, goodStoreHarness()) }

// A RecordKeeper is read back by its records.
func TestGoodRecordKeeperPasses(t *testing.T) {
	h := goodStoreHarness()
	h.New = func(testing.TB) polyloop.Store { return &goodKeeper{*newGoodStore()} }
	h.NewFaulty = func(testing.TB) (polyloop.Store, func()) {
		s := &goodKeeper{*newGoodStore()}
		return s, func() { s.armed = true }
	}
	h.Reopen = func(_ testing.TB, s polyloop.Store) polyloop.Store {
		return &goodKeeper{goodStore{b: s.(*goodKeeper).b}}
	}
	TestStore(t, h)
}

// A SnapshotKeeper is read back with its shared snapshots.
func TestGoodSnapshotKeeperPasses(t *testing.T) {
	h := goodStoreHarness()
	h.New = func(testing.TB) polyloop.Store { return &goodSharer{*newGoodStore()} }
	h.NewFaulty = func(testing.TB) (polyloop.Store, func()) {
		s := &goodSharer{*newGoodStore()}
		return s, func() { s.armed = true }
	}
	h.Reopen = func(_ testing.TB, s polyloop.Store) polyloop.Store {
		return &goodSharer{goodStore{b: s.(*goodSharer).b}}
	}
	TestStore(t, h)
}

func TestGoodSinkPasses(t *testing.T)      { TestEventSink(t, goodSinkHarness()) }
func TestGoodStreamingPasses(t *testing.T) { TestStreamingModelClient(t, goodStreamHarness()) }
