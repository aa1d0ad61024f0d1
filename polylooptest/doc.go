// Package polylooptest is the conformance kit of PolyLoop's five seams, and
// a set of fault-injecting fakes.
//
// An adapter author calls one function from their own test, as with
// testing/fstest.TestFS or golang.org/x/net/nettest.TestConn:
//
//	TestModelClient(t, ModelClientHarness{...})  // polyloop.ModelClient
//	TestStreamingModelClient(t, StreamingClientHarness{...}) // its Stream
//	TestDecisionParser(t, ParserHarness{...})    // polyloop.DecisionParser
//	TestActionExecutor(t, ExecutorHarness{...})  // polyloop.ActionExecutor
//	TestStore(t, StoreHarness{...})              // polyloop.Store
//	TestEventSink(t, SinkHarness{...})           // polyloop.EventSink
//	TestLeaser(t, LeaseHarness{...})             // polyloop.Leaser (a Store's leases)
//	TestMemoryStore(t, MemoryStoreHarness{...})  // memory.Store and memory.ViewStore
//
// Each check of a suite is a subtest with a stable name (listed in the
// function's doc), so `go test -run 'TestSQLiteStore/SeqRule'` runs one.
// A harness gives the kit a factory — called for each subtest, so every
// check gets a fresh instance — and the inputs and failure modes the kit
// cannot invent for an arbitrary implementation (a failing endpoint, an
// action that blocks, a way to break the environment). A check that needs
// something the harness does not give is skipped with the reason logged,
// never silently; a harness can also skip a named check with a reason
// (the Skip field), and a name that is no check fails the suite.
//
// Every failure names the rule of the contract it found broken, in the
// contract's words — "breaks «Parse MUST be deterministic»: input ..." — so
// that a failing check says which promise the implementation did not keep.
// The kit's own tests feed each check implementations broken for one rule
// and assert that the check fails for that rule, not merely that it fails.
//
// Each subtest runs under a watchdog (the harness's Timeout, DefaultTimeout
// when zero): a hung implementation fails with a goroutine dump instead of
// hanging CI. A panic in an implementation is recovered and reported as a
// failure with its stack. Run the suites with -race, from tests that are
// not parallel with others: the leak checks record the ids of the live
// goroutines before a call and report any goroutine started since that is
// still alive a moment after the call returned (as go.uber.org/goleak
// does), and a goroutine of a test running in parallel would look like one.
//
// # A worked example
//
// The SQLite store's test, in package sqlitestore_test:
//
//	func TestConformance(t *testing.T) {
//		open := func(t testing.TB, path string) polyloop.Store {
//			s, err := sqlitestore.Open(path, nil)
//			if err != nil {
//				t.Fatal(err)
//			}
//			t.Cleanup(func() { s.Close() })
//			return s
//		}
//		paths := map[polyloop.Store]string{}
//		polylooptest.TestStore(t, polylooptest.StoreHarness{
//			New: func(t testing.TB) polyloop.Store {
//				path := filepath.Join(t.TempDir(), "runs.db")
//				s := open(t, path)
//				paths[s] = path
//				return s
//			},
//			Reopen: func(t testing.TB, s polyloop.Store) polyloop.Store {
//				s.(*sqlitestore.Store).Close()
//				return open(t, paths[s])
//			},
//		})
//	}
//
// An OpenAI-compatible client's test points the client at httptest servers:
// one that answers, some that fail, one that never answers:
//
//	polylooptest.TestModelClient(t, polylooptest.ModelClientHarness{
//		New: func(t testing.TB) polyloop.ModelClient { return client(t, answer) },
//		Failing: map[string]func(testing.TB) polyloop.ModelClient{
//			"http_500":       func(t testing.TB) polyloop.ModelClient { return client(t, status(500)) },
//			"malformed_body": func(t testing.TB) polyloop.ModelClient { return client(t, garbage) },
//		},
//		NewHanging: func(t testing.TB) polyloop.ModelClient {
//			return client(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
//		},
//	})
//
// where client starts an httptest.Server with the handler, registers its
// Close with t.Cleanup, and returns a client pointed at it. A hanging
// handler must end when the client goes away, or the leak check will count
// the server's goroutine.
//
// # Fakes
//
// FaultyStore wraps any Store to fail an append or a read, lose an
// acknowledgement after a commit, or "crash" after N records;
// FaultyMemoryStore wraps memory ports to fail a commit before or after it
// lands, refuse it as a compare-and-set would, or break the port's
// contract; FaultyModel
// fails call N of a client; HangingExecutor and HangingModel block until
// cancelled; FaultySink fails, panics or hangs on chosen calls and records
// what it delivers. The wrappers keep the wrapped seam's snapshot identity,
// so a run stopped by a fault can be resumed with the bare seam. Injected
// faults wrap ErrInjected.
//
// # What the kit cannot assert
//
// An executor's environment failure must be returned as the EnvError
// status, not raised as an error. The kit cannot break an arbitrary
// environment; ExecutorHarness.NewBrokenEnv lets an adapter that can break
// its own (kill its server) assert it, and the library side — an executor
// error propagates out of Run and leaves the log at "action intent present,
// step record absent" — is asserted by TestExecutorErrorPropagates in
// package polyloop (SPEC §3.3).
package polylooptest
