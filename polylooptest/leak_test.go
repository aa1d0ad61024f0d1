package polylooptest

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestLeakedSeesLeakWhileOthersEnd is the case a goroutine count misses: a
// goroutine that was alive before the call ends during the settle window
// while the call leaks one, so the count is unchanged.
func TestLeakedSeesLeakWhileOthersEnd(t *testing.T) {
	endOld := make(chan struct{})
	oldDone := make(chan struct{})
	go func() { <-endOld; close(oldDone) }()
	base := goroutineBaseline()

	stopLeak := make(chan struct{})
	defer close(stopLeak)
	go leakyWorker(stopLeak)
	close(endOld)
	<-oldDone

	err := leakedWithin(base, "the call", 100*time.Millisecond)
	if err == nil {
		t.Fatal("leaked found nothing although a goroutine started after the baseline is still alive")
	}
	if !strings.Contains(err.Error(), "leakyWorker") {
		t.Errorf("the report does not show the leaked goroutine's stack:\n%v", err)
	}
}

func leakyWorker(stop <-chan struct{}) { <-stop }

// TestLeakedWaitsForEndingGoroutines: goroutines started by the call that
// end within the settle window are no leak.
func TestLeakedWaitsForEndingGoroutines(t *testing.T) {
	base := goroutineBaseline()
	for range 3 {
		go time.Sleep(50 * time.Millisecond)
	}
	if err := leaked(base, "the call"); err != nil {
		t.Fatal(err)
	}
}

// TestKitWrappersAreIgnored: the goroutine inFlight starts to run the call
// is the kit's own, and the name the leak check ignores is really its name.
func TestKitWrappersAreIgnored(t *testing.T) {
	var inside string
	e := &env{t: t, ctx: context.Background(), cancelWithin: time.Second}
	_ = inFlight(e, "probe", func(ctx context.Context) error {
		inside = string(allStacksOfCurrent())
		<-ctx.Done()
		return ctx.Err()
	}, false)
	if !ignorable(inside) {
		t.Errorf("the wrapper goroutine of inFlight is not ignored (wrappers %q):\n%s", kitWrappers, inside)
	}
}

// allStacksOfCurrent returns the calling goroutine's stack in the format
// of runtime.Stack(buf, true).
func allStacksOfCurrent() []byte {
	for _, g := range liveGoroutines() {
		if strings.Contains(g, "allStacksOfCurrent") {
			return []byte(g)
		}
	}
	return nil
}

func TestIgnorable(t *testing.T) {
	tests := []struct {
		name  string
		stack string
		want  bool
	}{
		{"test waiting for subtests", "goroutine 7 [chan receive]:\ntesting.(*T).Run(0xc000102000, {0x5e, 0x4}, 0xc0000a0)\n\t/go/src/testing/testing.go:1751 +0x3ab\nmain.TestX(0xc)\n\t/x_test.go:9 +0x1\ncreated by testing.(*T).Run in goroutine 1\n\t/go/src/testing/testing.go:1743 +0x3", true},
		{"runtime only", "goroutine 3 [GC sweep wait]:\nruntime.gopark(0x0?, 0x0?, 0x0?)\n\t/go/src/runtime/proc.go:435 +0xce\nruntime.bgsweep(0x0?)\n\t/go/src/runtime/mgcsweep.go:317 +0xdf", true},
		{"signal loop", "goroutine 9 [syscall]:\nos/signal.signal_recv()\n\t/go/src/runtime/sigqueue.go:152 +0x29\nos/signal.loop()\n\t/go/src/os/signal/signal_unix.go:23 +0x13", true},
		{"adapter goroutine", "goroutine 42 [select]:\nnet/http.(*persistConn).readLoop(0xc0001b4000)\n\t/go/src/net/http/transport.go:2395 +0xc65\ncreated by net/http.(*Transport).dialConn in goroutine 41\n\t/go/src/net/http/transport.go:1944 +0x174f", false},
		{"created by the kit but the adapter's", "goroutine 43 [chan receive]:\nexample.com/a.(*C).Complete.func1()\n\t/a.go:3 +0x1\ncreated by example.com/a.(*C).Complete in goroutine 42\n\t/a.go:2 +0x1", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ignorable(tt.stack); got != tt.want {
				t.Errorf("ignorable = %v, want %v; frames %q", got, tt.want, stackFuncs(tt.stack))
			}
		})
	}
}

func TestGoroutineID(t *testing.T) {
	for in, want := range map[string]uint64{"goroutine 1 [running]:\nmain.main()": 1, "\ngoroutine 123456 [select, 2 minutes]:": 123456} {
		if got, ok := goroutineID([]byte(in)); !ok || got != want {
			t.Errorf("goroutineID(%q) = %d, %v; want %d", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "goroutine x [running]:", "created by main.main"} {
		if _, ok := goroutineID([]byte(in)); ok {
			t.Errorf("goroutineID(%q) found an id", in)
		}
	}
}
