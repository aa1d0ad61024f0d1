package pgstore

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/url"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/storetest"
	"github.com/polyloop/polyloop/internal/workload"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/polylooptest"
)

// ackDropper is a TCP proxy in front of PostgreSQL that can lose one
// acknowledgement. Armed, it stops passing the server's messages to the
// client and, at the server's next ReadyForQuery — the pending batch's
// implicit transaction has ended, committed unless it failed — closes both
// connections: the server did the work, the client never hears of it.
type ackDropper struct {
	ln      net.Listener
	target  string
	armed   atomic.Bool
	dropped chan struct{} // closed once an acknowledgement was lost
}

func startAckDropper(t *testing.T, target string) *ackDropper {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &ackDropper{ln: ln, target: target, dropped: make(chan struct{})}
	go p.serve()
	t.Cleanup(func() { ln.Close() })
	return p
}

func (p *ackDropper) serve() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			client.Close()
			continue
		}
		go func() {
			io.Copy(server, client)
			server.Close()
		}()
		go p.toClient(server, client)
	}
}

// toClient passes the server's messages to the client, one whole message
// at a time, until armed; then it swallows them up to a ReadyForQuery and
// hangs up. (With sslmode=disable every server message is typed.)
func (p *ackDropper) toClient(server, client net.Conn) {
	defer client.Close()
	defer server.Close()
	r := bufio.NewReader(server)
	for {
		msg, err := readMessage(r)
		if err != nil {
			return
		}
		if p.armed.Load() {
			if msg[0] == 'Z' && p.armed.CompareAndSwap(true, false) {
				close(p.dropped)
				return
			}
			continue
		}
		if _, err := client.Write(msg); err != nil {
			return
		}
	}
}

// readMessage reads one protocol message: a type byte, a length that
// counts itself, the body.
func readMessage(r *bufio.Reader) ([]byte, error) {
	var head [5]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(head[1:])
	if n < 4 {
		return nil, errors.New("bad message length")
	}
	msg := make([]byte, 1+n)
	copy(msg, head[:])
	_, err := io.ReadFull(r, msg[5:])
	return msg, err
}

// lastAppend remembers the rows of the last Append it passed on.
type lastAppend struct {
	polyloop.Store
	last []polyloop.Row
}

func (s *lastAppend) Append(ctx context.Context, runID string, records []polyloop.Row) error {
	s.last = slices.Clone(records) // its seqs only: a store retains no row
	return s.Store.Append(ctx, runID, records)
}

// TestLostAcknowledgement (SPEC §7.4): the fourth Append of workload W
// (ModelCallResult + ActionIntent) commits, but its acknowledgement is lost
// with the connection. Run fails with a *polyloop.PersistenceError that is
// not a conflict; the log holds the records of the failed Append; a Resume
// reads them, replays the action, and finishes a run equivalent to an
// uninterrupted one.
func TestLostAcknowledgement(t *testing.T) {
	ctx := context.Background()
	direct := openT(t)
	u, err := url.Parse(dsn(t))
	if err != nil || u.Host == "" {
		t.Skip("POLYLOOP_TEST_POSTGRES is not a URL with a host")
	}
	proxy := startAckDropper(t, u.Host)
	u.Host = proxy.ln.Addr().String()
	q := u.Query()
	q.Set("sslmode", "disable")
	u.RawQuery = q.Encode()
	// One connection: the proxy's arming applies to the Append's.
	s, err := Open(ctx, u.String(), &Options{Schema: direct.schema, MaxConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var appends atomic.Int32
	s.afterRead = func(context.Context, *pgx.Conn) error {
		if appends.Add(1) == 4 {
			proxy.armed.Store(true)
		}
		return nil
	}
	w := workload.W{Steps: 4}
	store := &lastAppend{Store: s}
	_, err = w.Runner(store).Run(ctx, "lost-ack", w.Agent(), w.Task())
	var pe *polyloop.PersistenceError
	if !errors.As(err, &pe) || errors.Is(err, polyloop.ErrSeqConflict) {
		t.Fatalf("Run whose acknowledgement was lost: %v, want a *PersistenceError that is not a conflict", err)
	}
	select {
	case <-proxy.dropped:
	default:
		t.Fatalf("the proxy lost no acknowledgement; Run failed with %v", err)
	}
	t.Logf("Run: %v", err)
	got := storetest.ReadAll(t, ctx, direct, "lost-ack")
	if n := len(got); n == 0 || got[n-1].Seq != store.last[len(store.last)-1].Seq {
		t.Fatalf("log holds %d records; want it to end with the unacknowledged Append's (seq %d)", n, store.last[len(store.last)-1].Seq)
	}
	s.afterRead = nil
	res, err := w.Runner(s).Resume(ctx, "lost-ack", w.Agent())
	if err != nil {
		t.Fatalf("Resume: %v", err)
	}
	if err := w.Check(res); err != nil {
		t.Fatal(err)
	}
	ref := memstore.New()
	if err := storetest.RunW(ctx, w, w.Runner(ref), "lost-ack"); err != nil {
		t.Fatal(err)
	}
	l := polyloop.RunLog{Records: storetest.ReadAll(t, ctx, direct, "lost-ack")}
	if err := polylooptest.CheckEquivalent(l, polyloop.RunLog{Records: storetest.ReadAll(t, ctx, ref, "lost-ack")}); err != nil {
		t.Fatalf("log after the lost acknowledgement differs from an uninterrupted run's: %v", err)
	}
}
