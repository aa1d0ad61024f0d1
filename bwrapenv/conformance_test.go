//go:build linux

package bwrapenv_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/bwrapenv"
	"github.com/polyloop/polyloop/polylooptest"
	"github.com/polyloop/polyloop/snapshotstore"
)

// testImages is the image directory .ci/env-images builds; the tests that
// need it skip only when it is not configured (CI always configures it).
func testImages(t testing.TB) string {
	images := os.Getenv("POLYLOOP_TEST_BWRAP_IMAGES")
	if images == "" {
		t.Skip("POLYLOOP_TEST_BWRAP_IMAGES is not set (.ci/env-images DIR builds the test image)")
	}
	return images
}

// newProvider returns a provider on fresh state and snapshots, and the
// snapshot directory.
func newProvider(t testing.TB) (*bwrapenv.Provider, string) {
	snaps := filepath.Join(t.TempDir(), "snapshots")
	return openProvider(t, snaps), snaps
}

func openProvider(t testing.TB, snaps string) *bwrapenv.Provider {
	return openProviderWith(t, snaps, bwrapenv.Options{})
}

// openProviderWith opens a provider with opts' pool, background destroy
// and bound; it is closed when the test ends.
func openProviderWith(t testing.TB, snaps string, opts bwrapenv.Options) *bwrapenv.Provider {
	store, err := snapshotstore.OpenDir(snaps)
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(t.TempDir(), "envs")
	opts.Images, opts.StateDir, opts.Snapshots = testImages(t), state, store
	p, err := bwrapenv.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	statesMu.Lock()
	defer statesMu.Unlock()
	stateDirs[p] = state
	snapDirs[p] = snaps
	return p
}

var (
	statesMu  sync.Mutex
	stateDirs = map[*bwrapenv.Provider]string{}
	snapDirs  = map[*bwrapenv.Provider]string{}
)

// leftovers lists the environment directories (and their cgroups) of run.
// A provider that destroys in the background is closed first (Close waits
// for its destroys).
func leftovers(t testing.TB, p polyloop.EnvProvider, run string) []string {
	if err := p.(*bwrapenv.Provider).Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	statesMu.Lock()
	state := stateDirs[p.(*bwrapenv.Provider)]
	statesMu.Unlock()
	entries, _ := os.ReadDir(state)
	var out []string
	for _, e := range entries {
		dir := filepath.Join(state, e.Name())
		raw, err := os.ReadFile(filepath.Join(dir, "state.json"))
		var st struct {
			RunID   string   `json:"run_id"`
			Cgroups []string `json:"cgroups"`
		}
		if err != nil || json.Unmarshal(raw, &st) != nil || st.RunID == run {
			out = append(out, dir)
		}
		for _, cg := range st.Cgroups {
			if _, err := os.Stat(cg); err == nil && st.RunID == run {
				out = append(out, cg)
			}
		}
	}
	return out
}

func TestConformance(t *testing.T) {
	testImages(t)
	polylooptest.TestEnvProvider(t, polylooptest.EnvHarness{
		New: func(t testing.TB) polyloop.EnvProvider {
			p, _ := newProvider(t)
			return p
		},
		Reopen: func(t testing.TB, p polyloop.EnvProvider) polyloop.EnvProvider {
			return openProvider(t, snapDir(p))
		},
		Image:     "busybox",
		Leftovers: leftovers,
		Limits:    true,
	})
}

func snapDir(p polyloop.EnvProvider) string {
	statesMu.Lock()
	defer statesMu.Unlock()
	return snapDirs[p.(*bwrapenv.Provider)]
}

// TestConformancePooled: the kit, with a pool of started sandboxes and
// destroys in the background.
func TestConformancePooled(t *testing.T) {
	testImages(t)
	opts := bwrapenv.Options{Pool: 2, DestroyInBackground: true}
	polylooptest.TestEnvProvider(t, polylooptest.EnvHarness{
		New: func(t testing.TB) polyloop.EnvProvider {
			return openProviderWith(t, filepath.Join(t.TempDir(), "snapshots"), opts)
		},
		Reopen: func(t testing.TB, p polyloop.EnvProvider) polyloop.EnvProvider {
			return openProviderWith(t, snapDir(p), opts)
		},
		Image:     "busybox",
		Leftovers: leftovers,
		Limits:    true,
	})
}
