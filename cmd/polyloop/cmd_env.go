package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

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
		backend string
		dir     string
		dryRun  bool
	)
	cmd := &cobra.Command{
		Use:   "prune",
		Short: "Remove the environments whose driving process is gone",
		Long: `Find the environments left behind by a driving process that died (a killed
run, sweep or worker) by the run id and driver each carries — the sandbox
backend's state files, Docker containers labelled org.polyloop.env — and
remove them. Environments of live drivers are never touched; a container of a
driver on another host is removed only once it has stopped. Snapshots are not
touched: they belong to the runs' logs.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				dir = envStateDir(a.store)
			}
			return a.envPrune(cmd.Context(), backend, dir, dryRun)
		},
	}
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
			fmt.Fprintf(a.stdout, "%s %s environment of run %s (%s; driver %s)\n", verb, o.Backend, o.RunID, o.ID, o.Driver)
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
