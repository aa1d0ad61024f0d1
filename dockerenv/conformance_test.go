package dockerenv_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/moby/moby/client"
	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/dockerenv"
	"github.com/polyloop/polyloop/polylooptest"
	"github.com/polyloop/polyloop/snapshotstore"
)

// testImage is the image .ci/env-images imports; the tests skip only when
// it is not configured (CI always configures it).
func testImage(t testing.TB) string {
	im := os.Getenv("POLYLOOP_TEST_DOCKER_IMAGE")
	if im == "" {
		t.Skip("POLYLOOP_TEST_DOCKER_IMAGE is not set (.ci/env-images DIR imports the test image)")
	}
	return im
}

var (
	mu    sync.Mutex
	snaps = map[polyloop.EnvProvider]string{}
)

func openProvider(t testing.TB, dir string) *dockerenv.Provider {
	store, err := snapshotstore.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	p, err := dockerenv.New(dockerenv.Options{Snapshots: store})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	snaps[p] = dir
	mu.Unlock()
	return p
}

// leftovers lists the containers labelled with run.
func leftovers(t testing.TB, _ polyloop.EnvProvider, run string) []string {
	cli, err := client.New(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	list, err := cli.ContainerList(context.Background(), client.ContainerListOptions{All: true,
		Filters: make(client.Filters).Add("label", dockerenv.LabelRunID+"="+run)})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range list.Items {
		out = append(out, c.ID)
	}
	return out
}

func TestConformance(t *testing.T) {
	im := testImage(t)
	polylooptest.TestEnvProvider(t, polylooptest.EnvHarness{
		New: func(t testing.TB) polyloop.EnvProvider {
			return openProvider(t, filepath.Join(t.TempDir(), "snapshots"))
		},
		Reopen: func(t testing.TB, p polyloop.EnvProvider) polyloop.EnvProvider {
			mu.Lock()
			dir := snaps[p]
			mu.Unlock()
			return openProvider(t, dir)
		},
		Image:     im,
		Leftovers: leftovers,
		Limits:    true,
	})
}
