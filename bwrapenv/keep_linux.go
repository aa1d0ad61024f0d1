package bwrapenv

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"github.com/polyloop/polyloop"
)

// keptFile, in an environment's directory, marks it kept (polyloop.EnvKeeper).
const keptFile = "kept"

var (
	_ polyloop.EnvKeeper     = (*environment)(nil)
	_ polyloop.EnvKeptSparer = (*Provider)(nil)
)

// Keep implements polyloop.EnvKeeper: a file in the environment's
// directory, synced, that the automatic prune spares.
func (e *environment) Keep(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(e.dir, keptFile), os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return e.p.fail("keep", e.spec.RunID, nil, err)
	}
	err = errors.Join(f.Sync(), f.Close())
	if err != nil {
		return e.p.fail("keep", e.spec.RunID, nil, err)
	}
	return nil
}

// PruneSparingKept implements polyloop.EnvKeptSparer.
func (p *Provider) PruneSparingKept(ctx context.Context, dryRun bool) ([]polyloop.EnvOrphan, error) {
	return p.prune(ctx, dryRun, true)
}

func isKept(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, keptFile))
	return err == nil
}
