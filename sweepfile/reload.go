package sweepfile

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/polyloop/polyloop/sweep"
)

// Reload rebuilds a recorded sweep from its manifest (sweep.ReadManifest):
// it loads the sweep file at the path the manifest recorded and checks
// that it is still the same sweep — the same name and agents of the same
// snapshot hashes — so that the runs it executes or scores are the
// recorded ones. A process on another machine needs the same files at the
// same paths (a shared checkout); the manifest also keeps their texts, for
// a person to compare.
func Reload(ctx context.Context, m sweep.Manifest, opts *Options) (*Loaded, error) {
	var o origin
	if err := json.Unmarshal(m.Origin, &o); err != nil || o.File == "" {
		return nil, fmt.Errorf("sweep %s was not recorded from a sweep file: it cannot be reloaded", m.Name)
	}
	l, err := Load(ctx, o.File, opts)
	if err != nil {
		return nil, fmt.Errorf("reloading sweep %s from %s: %w", m.Name, o.File, err)
	}
	now := l.Sweep.Manifest()
	if now.Name != m.Name {
		l.Close()
		return nil, fmt.Errorf("%s now names the sweep %s, not %s", o.File, now.Name, m.Name)
	}
	have := map[string]string{}
	for _, a := range now.Agents {
		have[a.Name] = a.Hash
	}
	for _, a := range m.Agents {
		if h, ok := have[a.Name]; !ok || h != a.Hash {
			l.Close()
			return nil, fmt.Errorf("the agent %s of sweep %s changed since it ran (snapshot %s, now %s): its recorded runs are not this agent's; run the sweep again to run the changed agent",
				a.Name, m.Name, a.Hash, orNone(h))
		}
	}
	return l, nil
}

func orNone(h string) string {
	if h == "" {
		return "absent"
	}
	return h
}
