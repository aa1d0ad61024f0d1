package pgstore

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
)

// envNetFault enables the tests that drop packets with iptables (root
// only); .ci/run sets it.
const envNetFault = "POLYLOOP_TEST_NETFAULT"

// TestLeaseVanishedHolder is the hard case of liveness: a holder whose
// machine vanishes without closing its connection. Every packet of the
// holder's lease session is dropped (iptables, both directions, on that
// session's port only), so the server hears neither a close nor anything
// else. The holder must give its lease up (Lost) before the server frees
// the lock, and the server must free it within LeaseDeadHolderBound, the
// documented bound — this test measures the bound, the one duration the
// lease contract promises.
func TestLeaseVanishedHolder(t *testing.T) {
	if os.Getenv(envNetFault) == "" {
		t.Skip(envNetFault + " is not set (needs root and iptables)")
	}
	ctx := context.Background()
	holder := openT(t)
	peer, err := Open(ctx, dsn(t), &Options{Schema: holder.schema})
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	lease, err := holder.AcquireLease(ctx, "vanishing", polyloop.LeaseRequest{Owner: polyloop.LeaseOwner{Host: "h", PID: 1, Token: "tok-vanishing", Since: time.Now()}})
	if err != nil {
		t.Fatal(err)
	}
	holder.leases.mu.Lock()
	addr, ok := holder.leases.conn.PgConn().Conn().LocalAddr().(*net.TCPAddr)
	holder.leases.mu.Unlock()
	if !ok {
		t.Fatalf("the lease session is not on TCP (%v): the DSN must name a TCP host", addr)
	}
	dropPort(t, addr.Port)
	cut := time.Now()

	var lostAfter time.Duration
	lostCh := lease.Lost()
	for {
		if lostCh != nil {
			select {
			case <-lostCh:
				lostAfter, lostCh = time.Since(cut), nil
			default:
			}
		}
		l, err := peer.AcquireLease(ctx, "vanishing", polyloop.LeaseRequest{Owner: polyloop.LeaseOwner{Host: "h2", PID: 2, Token: "tok-peer", Since: time.Now()}})
		if err == nil {
			freedAfter := time.Since(cut)
			t.Logf("cut at 0: the holder saw its lease lost after %v; the server freed the lock after %v (bound %v)",
				lostAfter.Round(time.Millisecond), freedAfter.Round(time.Millisecond), LeaseDeadHolderBound)
			if tk := l.TakenOver(); tk == nil || tk.Reason != polyloop.TakeoverHolderDead || tk.From.Token != "tok-vanishing" {
				t.Errorf("take-over %+v, want holder_dead from tok-vanishing", tk)
			}
			l.Release(ctx)
			if lostCh != nil {
				t.Fatal("the lock was freed while the cut-off holder still believed it held the lease")
			}
			if freedAfter > LeaseDeadHolderBound {
				t.Fatalf("the vanished holder's lock was freed after %v, past the documented bound %v", freedAfter, LeaseDeadHolderBound)
			}
			return
		}
		if !errors.Is(err, polyloop.ErrLeaseHeld) {
			t.Fatal(err)
		}
		if time.Since(cut) > 3*LeaseDeadHolderBound {
			t.Fatalf("the vanished holder's lock is still held %v after the cut", time.Since(cut))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// dropPort drops every packet to and from a local TCP port until the test
// ends.
func dropPort(t *testing.T, port int) {
	t.Helper()
	p := strconv.Itoa(port)
	rules := [][]string{
		{"INPUT", "-i", "lo", "-p", "tcp", "--sport", p, "-j", "DROP"},
		{"INPUT", "-i", "lo", "-p", "tcp", "--dport", p, "-j", "DROP"},
	}
	for _, r := range rules {
		if out, err := exec.Command("iptables", append([]string{"-I"}, r...)...).CombinedOutput(); err != nil {
			t.Fatalf("iptables -I %v: %v: %s", r, err, out)
		}
		t.Cleanup(func() {
			if out, err := exec.Command("iptables", append([]string{"-D"}, r...)...).CombinedOutput(); err != nil {
				t.Errorf("iptables -D %v: %v: %s", r, err, out)
			}
		})
	}
}
