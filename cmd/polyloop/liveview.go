package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/view"
)

// liveViewGrace is how long a run's command waits, once the run returned,
// for the open pages of --view to get its last records (a finished run's
// pages end their streams at once; a suspended or interrupted run's are
// cut after it).
const liveViewGrace = 1500 * time.Millisecond

// liveView is polyloop view served by the process that drives a run
// (run/resume --view): the store's pages, and the model's text while it
// streams, which only this process sees (deltas are not records).
type liveView struct {
	previews *view.PreviewSink
	srv      *http.Server
}

// startLiveView serves the view on addr, reading st, with the previews of
// the runs this process drives; nil when addr is empty. It prints the
// run's page on standard error.
func (a *app) startLiveView(addr string, st view.Store, runID string) (*liveView, error) {
	if addr == "" {
		return nil, nil
	}
	previews := view.NewPreviewSink()
	h, err := view.New(view.Options{Store: st, Previews: previews})
	if err != nil {
		return nil, err
	}
	ln, err := listenView(a.stderr, "--view", addr)
	if err != nil {
		return nil, err
	}
	page := "/run?" + url.Values{"id": {runID}}.Encode()
	fmt.Fprintf(a.stderr, "polyloop view: http://%s%s (live while this command runs; the model's text as it streams)\n", ln.Addr(), page)
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return &liveView{previews: previews, srv: srv}, nil
}

// sinks adds the view's preview sink to a run's sinks.
func (v *liveView) sinks(s []polyloop.EventSink) []polyloop.EventSink {
	if v == nil {
		return s
	}
	return append(s, v.previews)
}

// close stops serving: the open pages get what the log holds, then their
// connections close.
func (v *liveView) close() {
	if v == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), liveViewGrace)
	defer cancel()
	if err := v.srv.Shutdown(ctx); err != nil {
		_ = v.srv.Close()
	}
}

// listenView listens for a view on addr (named by flag in errors), and
// warns when that is beyond loopback.
func listenView(stderr io.Writer, flag, addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", flag, addr, err)
	}
	if ip := ln.Addr().(*net.TCPAddr).IP; !ip.IsLoopback() {
		fmt.Fprintf(stderr, "polyloop view: listening on %s, beyond loopback: anyone who can reach it can read every run\n", ln.Addr())
	}
	return ln, nil
}
