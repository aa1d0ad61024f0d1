package polylooptest

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
)

// recordingTB records what the kit reports instead of reporting it.
// Methods it does not override panic (the embedded TB is nil).
type recordingTB struct {
	testing.TB
	mu       sync.Mutex
	errors   []string
	skips    []string
	logs     []string
	failed   bool
	skipped  bool
	cleanups []func()
}

func (r *recordingTB) Helper() {}

func (r *recordingTB) Error(args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors, r.failed = append(r.errors, fmt.Sprint(args...)), true
}

func (r *recordingTB) Skip(args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.skips, r.skipped = append(r.skips, fmt.Sprint(args...)), true
}

func (r *recordingTB) Logf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logs = append(r.logs, fmt.Sprintf(format, args...))
}

func (r *recordingTB) Fatal(args ...any) {
	r.Error(args...)
	runtime.Goexit()
}

func (r *recordingTB) Failed() bool  { r.mu.Lock(); defer r.mu.Unlock(); return r.failed }
func (r *recordingTB) Skipped() bool { r.mu.Lock(); defer r.mu.Unlock(); return r.skipped }

func (r *recordingTB) Cleanup(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cleanups = append(r.cleanups, f)
}

func TestReportSkipCarriesTheReason(t *testing.T) {
	h := goodStoreHarness()
	h.Reopen = nil
	rec := &recordingTB{}
	report(rec, runNamed(rec, storeChecks, "Reopen", h, h.settings()))
	if len(rec.skips) != 1 || !strings.Contains(rec.skips[0], "no Reopen") || rec.failed {
		t.Fatalf("skips %q, errors %q; want one skip naming the missing Reopen", rec.skips, rec.errors)
	}
}

func TestReportFailure(t *testing.T) {
	rec := &recordingTB{}
	report(rec, outcome{err: errors.New("seq conflict not detected")})
	if len(rec.errors) != 1 || !strings.Contains(rec.errors[0], "seq conflict") || rec.skipped {
		t.Fatalf("errors %q, skips %q", rec.errors, rec.skips)
	}
}

func TestHarnessSkipNeedsAReason(t *testing.T) {
	h := goodStoreHarness()
	h.Skip = map[string]string{"ListRuns": "the listing is in another package"}
	if o := runNamed(t, storeChecks, "ListRuns", h, h.settings()); o.skip == "" || !strings.Contains(o.skip, "another package") {
		t.Errorf("outcome %+v, want a skip with the harness's reason", o)
	}
	h.Skip = map[string]string{"ListRuns": " "}
	if o := runNamed(t, storeChecks, "ListRuns", h, h.settings()); o.err == nil {
		t.Errorf("a skip without a reason was accepted: %+v", o)
	}
}

func TestUnknownSkipNamesFail(t *testing.T) {
	err := unknownSkips("Store", map[string]string{"SeqRule": "x", "SeqRules": "typo"}, storeChecks)
	if err == nil || !strings.Contains(err.Error(), "SeqRules") || strings.Contains(err.Error(), `"SeqRule"`) {
		t.Errorf("unknownSkips = %v, want an error naming only SeqRules", err)
	}
}

func TestFactoryFatalStopsTheCheck(t *testing.T) {
	h := goodStoreHarness()
	h.New = func(t testing.TB) polyloop.Store {
		t.Fatal("cannot open the database")
		return nil
	}
	rec := &recordingTB{}
	o := runNamed(rec, storeChecks, "SeqRule", h, h.settings())
	if !o.stopped || !rec.failed {
		t.Fatalf("outcome %+v, recorded errors %q: want a stopped check and the factory's failure", o, rec.errors)
	}
	report(rec, o)
	if len(rec.errors) != 1 {
		t.Errorf("the stop was reported again: %q", rec.errors)
	}
}

func TestWatchdogNamesTheHang(t *testing.T) {
	h := goodStoreHarness()
	h.Timeout = 100 * time.Millisecond
	h.New = func(t testing.TB) polyloop.Store {
		release := make(chan struct{})
		t.Cleanup(func() { close(release) })
		return &blockingStore{goodStore: *newGoodStore(), release: release}
	}
	start := time.Now()
	o := runNamed(t, storeChecks, "EmptyLogForUnknownRun", h, h.settings())
	if o.err == nil || !strings.Contains(o.err.Error(), "did not finish within 100ms") {
		t.Fatalf("outcome %+v, want the watchdog's failure", o)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("the watchdog took %v", d)
	}
}

func TestPanicIsReportedWithItsStack(t *testing.T) {
	h := goodStoreHarness()
	h.New = func(testing.TB) polyloop.Store { return &panickingStore{*newGoodStore()} }
	o := runNamed(t, storeChecks, "EmptyLogForUnknownRun", h, h.settings())
	if o.err == nil || !strings.Contains(o.err.Error(), "panicked: panickingStore: nil map") || !strings.Contains(o.err.Error(), "ReadRows") {
		t.Fatalf("outcome %+v, want the panic with a stack naming ReadRows", o)
	}
}

func TestParserPanicNamesTheInput(t *testing.T) {
	h := parserWith(func(r polyloop.ModelReply) polyloop.Decision {
		if r.Text == "```" {
			panic("index out of range")
		}
		return nil
	})
	o := runNamed(t, parserChecks, "EdgeCases", h, h.settings())
	if o.err == nil || !strings.Contains(o.err.Error(), `"lone fence"`) {
		t.Fatalf("outcome %+v, want a failure naming the input", o)
	}
}

func TestGeneratedInputsAreSeeded(t *testing.T) {
	a := generated(ParserHarness{Seed: 7, Generated: 50})
	b := generated(ParserHarness{Seed: 7, Generated: 50})
	c := generated(ParserHarness{Seed: 8, Generated: 50})
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Error("the same seed gave different inputs")
	}
	if fmt.Sprint(a) == fmt.Sprint(c) {
		t.Error("different seeds gave the same inputs")
	}
}
