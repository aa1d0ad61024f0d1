package dockerenv_test

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/dockerenv"
	"github.com/polyloop/polyloop/internal/envloop"
)

// container is the Docker backend, for envloop.
func container(image string) envloop.Backend {
	return envloop.Backend{Name: "docker", Image: image,
		Provider: func(_ string, snaps polyloop.BlobStore) (polyloop.EnvProvider, error) {
			return dockerenv.New(dockerenv.Options{Snapshots: snaps})
		}}
}

// TestCrashCampaign: envloop.Campaign on Docker, with fewer points than
// the sandbox's (each of its steps costs ~0.5 s of Engine calls):
// POLYLOOP_TEST_DOCKER_CRASH_POINTS, else 15 (5 with -short: the two
// campaigns stay near 90 s of CI together). Every line once, every run
// completed, every log plans; the containers the killed drivers left are
// found and pruned.
func TestCrashCampaign(t *testing.T) {
	image := testImage(t)
	points := 15
	if testing.Short() {
		points = 5
	}
	if s := os.Getenv("POLYLOOP_TEST_DOCKER_CRASH_POINTS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatal(err)
		}
		points = n
	}
	p := envloop.Campaign(t, container(image), points, 2500*time.Millisecond)
	envloop.CheckPruned(t, p)
}
