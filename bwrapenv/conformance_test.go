//go:build linux

package bwrapenv_test

import (
	"encoding/json"
	"os"
	"path/filepath"
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
	store, err := snapshotstore.OpenDir(snaps)
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(t.TempDir(), "envs")
	p, err := bwrapenv.New(bwrapenv.Options{Images: testImages(t), StateDir: state, Snapshots: store})
	if err != nil {
		t.Fatal(err)
	}
	stateDirs[p] = state
	snapDirs[p] = snaps
	return p
}

var (
	stateDirs = map[*bwrapenv.Provider]string{}
	snapDirs  = map[*bwrapenv.Provider]string{}
)

// leftovers lists the environment directories (and their cgroups) of run.
func leftovers(t testing.TB, p polyloop.EnvProvider, run string) []string {
	entries, _ := os.ReadDir(stateDirs[p.(*bwrapenv.Provider)])
	var out []string
	for _, e := range entries {
		dir := filepath.Join(stateDirs[p.(*bwrapenv.Provider)], e.Name())
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
			return openProvider(t, snapDirs[p.(*bwrapenv.Provider)])
		},
		Image:     "busybox",
		Leftovers: leftovers,
		Limits:    true,
	})
}
