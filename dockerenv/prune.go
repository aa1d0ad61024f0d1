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
		o := polyloop.EnvOrphan{Backend: Backend, ID: c.ID, RunID: c.Labels[LabelRunID], Driver: driver}
		if !dryRun {
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
