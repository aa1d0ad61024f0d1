package dockerenv_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/envloop"
)

// TestMain lets the test binary play a driving process for TestDriverKilled.
func TestMain(m *testing.M) {
	if im := os.Getenv("DOCKERENV_TEST_DRIVER"); im != "" {
		os.Exit(driver(im))
	}
	envloop.Child(container(os.Getenv("POLYLOOP_TEST_DOCKER_IMAGE")))
	os.Exit(m.Run())
}

// driver creates a container, starts a command that would write
// /work/late two seconds later, prints the container id and waits to be
// killed.
func driver(image string) int {
	p := openProvider(&testing.T{}, filepath.Join(os.TempDir(), "dockerenv-driver-snapshots"))
	ctx := context.Background()
	e, err := p.Create(ctx, polyloop.EnvSpec{RunID: "killed-driver", Image: image})
	if err != nil {
		os.Stderr.WriteString(err.Error())
		return 2
	}
	go e.Exec(ctx, polyloop.ExecRequest{Argv: []string{"sh", "-c", "sleep 2; mkdir -p /work; echo late > /work/late"}})
	time.Sleep(500 * time.Millisecond)
	os.Stdout.WriteString(leftovers(&testing.T{}, nil, "killed-driver")[0] + "\n")
	select {}
}

// TestDriverKilled: when the driving process dies (SIGKILL), its
// container stops — the command in it never writes its file — and Prune
// removes it.
func TestDriverKilled(t *testing.T) {
	im := testImage(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "DOCKERENV_TEST_DRIVER="+im)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	id, _ := bufio.NewReader(out).ReadString('\n')
	if len(id) < 13 {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the driver did not start its container: %q", id)
	}
	id = id[:len(id)-1]
	cli, err := client.New(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	defer cli.ContainerRemove(context.Background(), id, client.ContainerRemoveOptions{Force: true})
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	time.Sleep(3 * time.Second) // past the moment the command would have written
	ins, err := cli.ContainerInspect(context.Background(), id, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ins.Container.State.Running {
		t.Fatal("the container of a killed driver still runs")
	}
	if _, err := cli.ContainerStatPath(context.Background(), id, client.ContainerStatPathOptions{Path: "/work/late"}); err == nil {
		t.Fatal("the command of a killed driver ran on and wrote /work/late")
	}
	p := openProvider(t, filepath.Join(t.TempDir(), "snapshots"))
	found, err := p.Prune(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range found {
		if o.ID == id && o.Removed && o.RunID == "killed-driver" {
			return
		}
	}
	t.Fatalf("Prune found %+v, not the killed driver's container %s", found, id)
}
