package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/bwrapenv"
	"github.com/polyloop/polyloop/dockerenv"
	"github.com/polyloop/polyloop/snapshotstore"
)

// TestEnvPrune: an environment whose driver is gone (a state file naming a
// process that does not run; a labelled container that never ran) is
// found and removed; one whose driver lives (this process) is kept.
func TestEnvPrune(t *testing.T) {
	dir := t.TempDir()
	host, _ := os.Hostname()
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	write := func(name, state string) {
		os.MkdirAll(filepath.Join(dir, name, "rw", "upper"), 0o755)
		if err := os.WriteFile(filepath.Join(dir, name, "state.json"), []byte(state), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	b := strings.TrimSpace(string(boot))
	write("dead-1", `{"run_id":"dead-run","host":"`+host+`","boot_id":"`+b+`","driver_pid":999999999,"driver_start":1}`)
	self := `{"run_id":"live-run","host":"` + host + `","boot_id":"` + b + `","driver_pid":` + itoa(os.Getpid()) + `,"driver_start":` + utoa(procStart(os.Getpid())) + `}`
	write("live-1", self)
	backend := "bwrap"
	var containerID string
	if im := os.Getenv("POLYLOOP_TEST_DOCKER_IMAGE"); im != "" {
		backend = "all"
		containerID = orphanContainer(t, im)
	}
	var out bytes.Buffer
	a := &app{stdin: strings.NewReader(""), stdout: &out, stderr: io.Discard}
	if err := a.envPrune(context.Background(), backend, dir, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "removed bwrap environment of run dead-run") || strings.Contains(out.String(), "live-run") {
		t.Errorf("prune said:\n%s", out.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "dead-1")); err == nil {
		t.Error("the dead driver's environment is still there")
	}
	if _, err := os.Stat(filepath.Join(dir, "live-1")); err != nil {
		t.Error("the live driver's environment was removed")
	}
	if containerID != "" && !strings.Contains(out.String(), "removed docker environment of run orphan-run ("+containerID) {
		t.Errorf("the orphaned container was not removed:\n%s", out.String())
	}
}

func orphanContainer(t *testing.T, image string) string {
	cli, err := client.New(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	res, err := cli.ContainerCreate(context.Background(), client.ContainerCreateOptions{Config: &container.Config{Image: image, Cmd: []string{"true"},
		Labels: map[string]string{dockerenv.LabelEnv: "1", dockerenv.LabelRunID: "orphan-run", dockerenv.LabelDriver: "elsewhere 1 1"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.ContainerRemove(context.Background(), res.ID, client.ContainerRemoveOptions{Force: true}) })
	return res.ID
}

func procStart(pid int) uint64 {
	raw, _ := os.ReadFile("/proc/" + itoa(pid) + "/stat")
	s := string(raw)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	var v uint64
	for _, c := range f[19] {
		v = v*10 + uint64(c-'0')
	}
	return v
}

func itoa(n int) string    { return strconv.Itoa(n) }
func utoa(n uint64) string { return strconv.FormatUint(n, 10) }

// TestEnvPruneSnapshots: env prune --snapshots lets go the snapshots of a
// run whose log the store no longer holds and removes them; those of a run
// the store holds (and a blob shared with it) stay.
func TestEnvPruneSnapshots(t *testing.T) {
	t.Setenv("POLYLOOP_ENV_SNAPSHOTS", "")
	dir := t.TempDir()
	db := filepath.Join(dir, "runs.db")
	if err := writeLog(db, "kept-run", "finished"); err != nil {
		t.Fatal(err)
	}
	snaps, err := snapshotstore.OpenDir(filepath.Join(dir, "snapshots"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	blob := func(s string, refs ...string) polyloop.Blob {
		return polyloop.Blob{Digest: polyloop.DigestOf([]byte(s)), Data: []byte(s), Refs: refs}
	}
	shared, own, gone := blob("shared chunk"), blob("kept run's chunk"), blob("deleted run's chunk")
	keptManifest, goneManifest := blob("kept manifest", shared.Digest, own.Digest), blob("gone manifest", shared.Digest, gone.Digest)
	if err := snaps.Put(ctx, shared, own, gone, keptManifest, goneManifest); err != nil {
		t.Fatal(err)
	}
	if err := snaps.Pin(ctx, "kept-run", keptManifest.Digest); err != nil {
		t.Fatal(err)
	}
	if err := snaps.Pin(ctx, "deleted-run", goneManifest.Digest); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	a := &app{stdin: strings.NewReader(""), stdout: &out, stderr: io.Discard, store: "sqlite:" + db, storeGiven: true}
	if err := a.snapshotPrune(ctx, false, 0); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "let go the snapshots of run deleted-run") || strings.Contains(out.String(), "of run kept-run") ||
		!strings.Contains(out.String(), "removed 2 blobs") {
		t.Errorf("prune said:\n%s", out.String())
	}
	for _, b := range []polyloop.Blob{shared, own, keptManifest} {
		if _, err := snaps.Get(ctx, b.Digest); err != nil {
			t.Errorf("a blob the kept run's snapshot reaches is gone: %v", err)
		}
	}
	for _, b := range []polyloop.Blob{gone, goneManifest} {
		if _, err := snaps.Get(ctx, b.Digest); !errors.Is(err, polyloop.ErrBlobNotFound) {
			t.Errorf("a blob only the deleted run reached is still there: %v", err)
		}
	}
}

// TestEnvPruneKept: an environment marked kept (sweep --keep-environments)
// whose driver is gone survives the automatic prune a sweep's start does;
// polyloop env prune removes it and says it was kept.
func TestEnvPruneKept(t *testing.T) {
	dir := t.TempDir()
	host, _ := os.Hostname()
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	env := filepath.Join(dir, "kept-1")
	os.MkdirAll(filepath.Join(env, "rw", "upper"), 0o755)
	state := `{"run_id":"kept-run","host":"` + host + `","boot_id":"` + strings.TrimSpace(string(boot)) + `","driver_pid":999999999,"driver_start":1}`
	if err := os.WriteFile(filepath.Join(env, "state.json"), []byte(state), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(env, "kept"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := bwrapenv.New(bwrapenv.Options{StateDir: dir, Snapshots: snapshotstore.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	sparer, ok := polyloop.EnvProvider(p).(polyloop.EnvKeptSparer)
	if !ok {
		t.Fatal("the sandbox provider does not spare kept environments")
	}
	found, err := sparer.PruneSparingKept(context.Background(), false)
	if err != nil || len(found) != 1 || !found[0].Kept || found[0].Removed {
		t.Fatalf("automatic prune: %+v, %v", found, err)
	}
	if _, err := os.Stat(env); err != nil {
		t.Fatal("the automatic prune removed a kept environment")
	}
	var out bytes.Buffer
	a := &app{stdin: strings.NewReader(""), stdout: &out, stderr: io.Discard}
	if err := a.envPrune(context.Background(), "bwrap", dir, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "removed bwrap kept environment of run kept-run") {
		t.Errorf("prune said:\n%s", out.String())
	}
	if _, err := os.Stat(env); err == nil {
		t.Error("env prune left the kept environment")
	}
}
