package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/bwrapenv"
	"github.com/polyloop/polyloop/dockerenv"
	"github.com/polyloop/polyloop/snapshotstore"
	"github.com/polyloop/polyloop/sweep"
	"github.com/spf13/cobra"
)

func newEnvCmd(a *app) *cobra.Command {
	env := &cobra.Command{
		Use:   "env",
		Short: "Manage the environments (sandboxes, containers) runs execute in",
	}
	env.AddCommand(newEnvPruneCmd(a), newEnvExportCmd(a))
	return env
}

// envStateDir is where the sandbox backend keeps its environments: beside
// a SQLite store, under ./.polyloop otherwise.
func envStateDir(storeSpec string) string {
	if p, ok := strings.CutPrefix(storeSpec, "sqlite:"); ok {
		return filepath.Join(filepath.Dir(p), "envs")
	}
	return filepath.Join(".polyloop", "envs")
}

// envSnapshotDir is where snapshots of environments live: beside a SQLite
// store (the run can be resumed from that machine), under ./.polyloop
// otherwise; POLYLOOP_ENV_SNAPSHOTS names another directory (one every
// worker mounts, for a PostgreSQL store shared by several machines).
func envSnapshotDir(storeSpec string) string {
	if d := os.Getenv("POLYLOOP_ENV_SNAPSHOTS"); d != "" {
		return d
	}
	if p, ok := strings.CutPrefix(storeSpec, "sqlite:"); ok {
		return filepath.Join(filepath.Dir(p), "snapshots")
	}
	return filepath.Join(".polyloop", "snapshots")
}

// envImagesDir is the sandbox backend's image directory:
// POLYLOOP_ENV_IMAGES, else ~/.cache/polyloop/env-images (.ci/env-images
// DIR builds the busybox image into DIR).
func envImagesDir() string {
	if d := os.Getenv("POLYLOOP_ENV_IMAGES"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(".polyloop", "env-images")
	}
	return filepath.Join(home, ".cache", "polyloop", "env-images")
}

// envProvider is the provider of an environment backend for the agent files
// this invocation loads: its environments beside the store, its snapshots
// in envSnapshotDir. One per backend and invocation.
func (a *app) envProvider(backend string) (polyloop.EnvProvider, error) {
	a.envMu.Lock()
	defer a.envMu.Unlock()
	if p, ok := a.envs[backend]; ok {
		return p, nil
	}
	snaps, err := snapshotstore.OpenDir(envSnapshotDir(a.store))
	if err != nil {
		return nil, err
	}
	var p polyloop.EnvProvider
	switch backend {
	case "bwrap":
		p, err = bwrapenv.New(bwrapenv.Options{Images: envImagesDir(), StateDir: envStateDir(a.store), Snapshots: snaps,
			Pool: a.envPool, DestroyInBackground: a.envPool > 0,
			ImagesFrom: "images are found in the directory POLYLOOP_ENV_IMAGES names, default ~/.cache/polyloop/env-images; .ci/env-images DIR builds the busybox image"})
		if err != nil {
			err = fmt.Errorf("%w (install bubblewrap: apt-get install bubblewrap; images: .ci/env-images %s)", err, envImagesDir())
		}
	case "docker":
		p, err = dockerenv.New(dockerenv.Options{Snapshots: snaps})
	default:
		err = fmt.Errorf("unknown environment backend %q", backend)
	}
	if err != nil {
		return nil, err
	}
	if a.envs == nil {
		a.envs = map[string]polyloop.EnvProvider{}
	}
	a.envs[backend] = p
	return p, nil
}

// closeEnvs closes the providers that have a Close (the sandbox backend's:
// its pool drained, its background destroys waited for), when the
// invocation ends.
func (a *app) closeEnvs() {
	a.envMu.Lock()
	defer a.envMu.Unlock()
	for _, p := range a.envs {
		if c, ok := p.(interface{ Close() error }); ok {
			if err := c.Close(); err != nil {
				fmt.Fprintf(a.stderr, "polyloop: environments: %v (left for polyloop env prune)\n", err)
			}
		}
	}
}

// sweepEnvPool is the sandbox pool of a sweep or worker of concurrency n:
// one started sandbox per run at once, at most 8.
func sweepEnvPool(n int) int {
	if n <= 0 {
		n = sweep.DefaultConcurrency
	}
	return min(n, 8)
}

func newEnvPruneCmd(a *app) *cobra.Command {
	var (
		backend   string
		dir       string
		dryRun    bool
		snapshots bool
		grace     time.Duration
	)
	cmd := &cobra.Command{
		Use:   "prune",
		Short: "Remove the environments whose driving process is gone",
		Long: `Find the environments left behind by a driving process that died (a killed
run, sweep or worker) by the run id and driver each carries — the sandbox
backend's state files, Docker containers labelled org.polyloop.env — and
remove them. Environments of live drivers are never touched; a container of a
driver on another host is removed only once it has stopped. The environments
a sweep kept (sweep --keep-environments) are removed too, and said to be kept:
the automatic prune at a sweep's start spares them, so they last until this
command is run.

Snapshots belong to the runs' logs, not to their environments: a finished
run's snapshots serve fork --at-step, env export, diff --files and command
scorers as long as its log exists, so destroying an environment keeps them.
With --snapshots, prune also collects them: the pins of every run whose log
the store no longer holds (a deleted run) are dropped, then every blob that no
pin reaches and that was not written within --grace is removed. A blob a log
in the store names is never removed (each run pins its snapshots, a fork the
one it starts from). With POLYLOOP_ENV_SNAPSHOTS set the directory may be
shared by other stores, so no pin is dropped: only unpinned blobs go.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				dir = envStateDir(a.store)
			}
			if err := a.envPrune(cmd.Context(), backend, dir, dryRun); err != nil {
				return err
			}
			if snapshots {
				return a.snapshotPrune(cmd.Context(), dryRun, grace)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&snapshots, "snapshots", false, "also remove the snapshots no run log in the store refers to any more")
	cmd.Flags().DurationVar(&grace, "grace", polyloop.DefaultSweepGrace, "with --snapshots: keep blobs written within this long (a snapshot being written)")
	cmd.Flags().StringVar(&backend, "backend", "all", "which backend to prune: bwrap, docker or all")
	cmd.Flags().StringVar(&dir, "dir", "", "the sandbox backend's environment directory (default: envs beside the SQLite store)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "list what would be removed, remove nothing")
	return cmd
}

func (a *app) envPrune(ctx context.Context, backend, dir string, dryRun bool) error {
	if ctx == nil {
		ctx = context.Background()
	}
	var pruners []polyloop.EnvPruner
	var skipped []string
	if _, err := os.Stat(dir); err != nil && backend == "all" {
		skipped = append(skipped, fmt.Sprintf("bwrap: no environment directory %s", dir))
	} else if backend == "bwrap" || backend == "all" {
		p, err := bwrapenv.New(bwrapenv.Options{StateDir: dir, Snapshots: snapshotstore.NewMemory()})
		switch {
		case err == nil:
			pruners = append(pruners, p)
		case backend == "bwrap":
			return err
		default:
			skipped = append(skipped, fmt.Sprintf("bwrap: %v", err))
		}
	}
	if backend == "docker" || backend == "all" {
		p, err := dockerenv.New(dockerenv.Options{Snapshots: snapshotstore.NewMemory()})
		if err != nil {
			return err
		}
		pruners = append(pruners, p)
	}
	if len(pruners) == 0 && len(skipped) == 0 {
		return fmt.Errorf("--backend %q: expected bwrap, docker or all", backend)
	}
	var errs []error
	found := 0
	for _, p := range pruners {
		orphans, err := p.Prune(ctx, dryRun)
		for _, o := range orphans {
			found++
			verb := "removed"
			if !o.Removed {
				verb = "would remove"
			}
			kept := ""
			if o.Kept {
				kept = "kept " // by sweep --keep-environments
			}
			fmt.Fprintf(a.stdout, "%s %s %senvironment of run %s (%s; driver %s)\n", verb, o.Backend, kept, o.RunID, o.ID, o.Driver)
		}
		if err != nil {
			if backend == "all" && errors.Is(err, polyloop.ErrEnvFailed) && len(orphans) == 0 {
				skipped = append(skipped, err.Error())
				continue
			}
			errs = append(errs, err)
		}
	}
	for _, s := range skipped {
		fmt.Fprintf(a.stderr, "skipped %s\n", s)
	}
	if found == 0 {
		fmt.Fprintln(a.stdout, "no environment without a live driver")
	}
	return errors.Join(errs...)
}

// snapshotPrune lets go the snapshot pins of the runs the store no longer
// holds and sweeps the snapshot directory: a blob a log of the store names
// stays pinned by that log's run, so it is never removed.
func (a *app) snapshotPrune(ctx context.Context, dryRun bool, grace time.Duration) error {
	if ctx == nil {
		ctx = context.Background()
	}
	dir := envSnapshotDir(a.store)
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(a.stdout, "no snapshot directory %s\n", dir)
		return nil
	} else if err != nil {
		return fmt.Errorf("snapshot directory: %w", err)
	}
	snaps, err := snapshotstore.OpenDir(dir)
	if err != nil {
		return err
	}
	shared := os.Getenv("POLYLOOP_ENV_SNAPSHOTS") != ""
	holders, err := snaps.Holders(ctx)
	if err != nil {
		return err
	}
	st, err := a.openRead(ctx, readOnlyStore)
	if err != nil {
		return err
	}
	defer st.Close()
	slices.Sort(holders)
	for _, h := range holders {
		rows, err := st.ReadRowsFrom(ctx, h, 0, 1)
		if err != nil {
			return fmt.Errorf("snapshots of run %s: %w (nothing removed)", h, err)
		}
		if len(rows) > 0 {
			continue // the run's log names them
		}
		switch {
		case shared:
			fmt.Fprintf(a.stdout, "kept the snapshots of run %s, not in this store: POLYLOOP_ENV_SNAPSHOTS may be shared by other stores\n", h)
			continue
		case dryRun:
			fmt.Fprintf(a.stdout, "would let go the snapshots of run %s (no log in the store)\n", h)
			continue
		}
		if err := snaps.Unpin(ctx, h); err != nil {
			return err
		}
		fmt.Fprintf(a.stdout, "let go the snapshots of run %s (no log in the store)\n", h)
	}
	if dryRun {
		fmt.Fprintln(a.stdout, "snapshots: dry run, no blob removed")
		return nil
	}
	res, err := snaps.Sweep(ctx, grace)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "snapshots: removed %d blobs (%d bytes), kept %d (%d bytes) in %s\n", res.Removed, res.RemovedBytes, res.Kept, res.KeptBytes, dir)
	return nil
}
