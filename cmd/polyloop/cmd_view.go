package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/polyloop/polyloop/internal/dsn"
	"github.com/polyloop/polyloop/snapshotstore"
	"github.com/polyloop/polyloop/sweep"
	"github.com/polyloop/polyloop/sweep/sweepview"
	"github.com/polyloop/polyloop/view"
	"github.com/spf13/cobra"
)

type viewFlags struct {
	addr  string
	hosts []string
	poll  time.Duration
}

func newViewCmd(a *app) *cobra.Command {
	var f viewFlags
	c := &cobra.Command{
		Use:   "view",
		Short: "Serve a read-only web page of runs, trajectories, comparisons and statistics",
		Long: `Serve a local, read-only web page of the store's runs: the runs list (filters,
sort and page in the URL, so a link reproduces the view), a run's trajectory
(replies, tool calls, decisions, each action's status and observation beside
the executor's own audit text, failures, usage and cost, executions of unknown
outcome, child runs, the resume history and configuration overrides), two runs
compared step by step with the first divergence marked, and statistics drawn
as SVG — the same numbers as polyloop stats. An unfinished run's page follows
its log as records land.

The page listens on loopback (127.0.0.1:8686) and answers only requests that
name a loopback host, which defeats DNS rebinding; --allow-host adds a name
(for example when --addr listens beyond loopback: anyone who can reach it can
read every run). Nothing on the page loads from the network.

A run's page and a comparison show 100 steps per page (?page=N); at most 32
unfinished runs are followed live at once (one more is refused with 503). A
SQLite store is opened read-only: a user who may read it but not write it can
serve it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.view(cmd.Context(), &f)
		},
	}
	c.Flags().StringVar(&f.addr, "addr", "127.0.0.1:8686", "address to listen on")
	c.Flags().StringArrayVar(&f.hosts, "allow-host", nil, "a Host header to accept besides loopback names (host:port; repeatable)")
	c.Flags().DurationVar(&f.poll, "poll", 500*time.Millisecond, "how often a live page reads its run's log again")
	return c
}

func (a *app) view(ctx context.Context, f *viewFlags) error {
	if f.poll <= 0 {
		return fmt.Errorf("--poll must be positive")
	}
	st, err := openStore(ctx, a.store, readOnlyStore)
	if err != nil {
		return err
	}
	defer st.Close()
	opts := view.Options{Store: st, Poll: f.poll, AllowedHosts: f.hosts}
	// The snapshot store diff --files reads, when it exists (the view
	// creates nothing).
	if dir := envSnapshotDir(a.store); isDir(dir) {
		if opts.Snapshots, err = snapshotstore.OpenDir(dir); err != nil {
			return err
		}
	}
	if ss, ok := st.(sweep.Store); ok {
		opts.Sweeps = sweepview.New(ss)
	}
	h, err := view.New(opts)
	if err != nil {
		return err
	}
	ln, err := listenView(a.stderr, "--addr", f.addr)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "polyloop view: %s on http://%s/ (Ctrl-C stops)\n", dsn.Redact(a.store), ln.Addr())
	return serveUntilInterrupted(ctx, ln, h)
}

// serveUntilInterrupted serves until SIGINT or SIGTERM, then lets the
// requests in flight end (live pages are cut after a second).
func serveUntilInterrupted(ctx context.Context, ln net.Listener, h http.Handler) error {
	ictx, _, stop := interruptible(ctx)
	defer stop()
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ictx }}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ictx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

// isDir reports whether path is a directory.
func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}
