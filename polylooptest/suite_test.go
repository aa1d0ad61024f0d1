package polylooptest

import (
	"testing"
)

func TestGoodModelClientPasses(t *testing.T) { TestModelClient(t, goodModelHarness()) }
func TestGoodParserPasses(t *testing.T)      { TestDecisionParser(t, goodParserHarness()) }
func TestGoodExecutorPasses(t *testing.T)    { TestActionExecutor(t, goodExecutorHarness()) }
func TestGoodStorePasses(t *testing.T)       { TestStore(t, goodStoreHarness()) }
func TestGoodSinkPasses(t *testing.T)        { TestEventSink(t, goodSinkHarness()) }
func TestGoodStreamingPasses(t *testing.T)   { TestStreamingModelClient(t, goodStreamHarness()) }
