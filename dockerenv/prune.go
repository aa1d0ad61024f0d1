package dockerenv

import (
	"context"
	"os"
	"strconv"
	"strings"

	"github.com/moby/moby/client"
	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/procstart"
)

// Prune removes the containers labelled as environments whose driver is
// gone: stopped ones (a container stops when its driver detaches, see the
// package documentation), and running ones whose driver, on this host, no
// longer runs. A running container of a driver on another host is left
// alone.
func (p *Provider) Prune(ctx context.Context, dryRun bool) ([]polyloop.EnvOrphan, error) {
	return p.prune(ctx, dryRun, false)
}

// PruneSparingKept implements polyloop.EnvKeptSparer.
func (p *Provider) PruneSparingKept(ctx context.Context, dryRun bool) ([]polyloop.EnvOrphan, error) {
	return p.prune(ctx, dryRun, true)
}

// keptPrefix begins the name of a container marked kept (Keep renames it:
// the Engine's labels cannot change after creation).
const keptPrefix = "polyloop-kept-"

var (
	_ polyloop.EnvKeeper     = (*environment)(nil)
	_ polyloop.EnvKeptSparer = (*Provider)(nil)
)

// Keep implements polyloop.EnvKeeper: the container is renamed
// polyloop-kept-<run id>-<short id>, which the automatic prune spares.
func (e *environment) Keep(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	name := keptPrefix + keptName(e.spec.RunID) + "-" + e.id[:min(12, len(e.id))]
	if _, err := e.p.cli.ContainerRename(ctx, e.id, client.ContainerRenameOptions{NewName: name}); err != nil {
		return fail("keep", e.spec.RunID, err)
	}
	return nil
}

// keptName is a run id as a container name may hold it ([a-zA-Z0-9_.-]).
func keptName(runID string) string {
	b := []byte(runID)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			b[i] = '_'
		}
	}
	if len(b) > 40 {
		b = b[:40]
	}
	return string(b)
}

func isKept(names []string) bool {
	for _, n := range names {
		if strings.HasPrefix(strings.TrimPrefix(n, "/"), keptPrefix) {
			return true
		}
	}
	return false
}

func (p *Provider) prune(ctx context.Context, dryRun, spareKept bool) ([]polyloop.EnvOrphan, error) {
	list, err := p.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", LabelEnv)})
	if err != nil {
		return nil, fail("prune", "", err)
	}
	host, _ := os.Hostname()
	var out []polyloop.EnvOrphan
	for _, c := range list.Items {
		driver := c.Labels[LabelDriver]
		if c.State == "running" && !deadHere(driver, host) {
			continue
		}
		o := polyloop.EnvOrphan{Backend: Backend, ID: c.ID, RunID: c.Labels[LabelRunID], Driver: driver, Kept: isKept(c.Names)}
		if !dryRun && !(spareKept && o.Kept) {
			if _, err := p.cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil {
				return out, fail("prune", o.RunID, err)
			}
			o.Removed = true
		}
		out = append(out, o)
	}
	return out, nil
}

// deadHere reports whether a driver label names a process of this host
// that no longer runs.
func deadHere(label, host string) bool {
	f := strings.Fields(label)
	if len(f) != 3 || f[0] != host {
		return false
	}
	pid, err1 := strconv.Atoi(f[1])
	start, err2 := strconv.ParseUint(f[2], 10, 64)
	if err1 != nil || err2 != nil {
		return false
	}
	return procstart.Of(pid) != start
}
