package main

import (
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/agentfile"
	"github.com/polyloop/polyloop/bwrapenv"
	"github.com/polyloop/polyloop/snapshotstore"
)

// The demo's sandbox part: where bubblewrap and a busybox image are at
// hand, the demo agent's shell runs in a sandbox of its own, and the killed
// action appends a line to a file inside it. The action's intent names the
// snapshot taken before it; resume restores that snapshot — the line the
// killed attempt appended goes with it — and runs the action again: the
// file holds the line once.
const demoSandboxAgent = `name: demo
system: You keep a journal in a sandbox, using the bash tool.
model:
  provider: script
  cost_per_token: 0.000002
  script:
    - tool: bash
      args: {command: "echo 'the log is the source of truth' >> journal.txt && echo saved"}
    - tool: bash
      args: {command: "echo 'a crash costs the action, not the episode' >> journal.txt && sleep 2 && wc -l < journal.txt"}
    - text: "journal.txt holds 2 lines."
parser:
  kind: toolcall
tools:
  shell:
    dir: /work
    timeout_ms: 20000
environment:
  backend: bwrap
  image: busybox
  workdir: /work
  limits: {pids: 64}
limits:
  max_steps: 10
`

// demoSandbox reports whether the sandbox part can run here, and if not,
// what to install. The image is the one of envImagesDir, or one built in
// dir from a static busybox (Debian's busybox-static).
func demoSandbox(dir string) (images string, missing string) {
	if os.Getenv("POLYLOOP_DEMO_SANDBOX") == "off" {
		return "", "off"
	}
	if _, err := exec.LookPath("bwrap"); err != nil {
		return "", "bubblewrap (Debian/Ubuntu: apt-get install bubblewrap busybox-static)"
	}
	images = envImagesDir()
	if fi, err := os.Stat(filepath.Join(images, "busybox", "rootfs")); err != nil || !fi.IsDir() {
		images = filepath.Join(dir, "images")
		if err := buildBusyboxImage(images); err != nil {
			return "", fmt.Sprintf("a busybox image (apt-get install busybox-static, or .ci/env-images %s): %v", envImagesDir(), err)
		}
	}
	// A sandbox must start here: a kernel or a host may forbid the user
	// namespaces or the overlay it needs.
	p, err := demoAgentOptions(filepath.Join(dir, "probe"), images).Environments("bwrap")
	if err == nil {
		var e polyloop.Environment
		if e, err = p.Create(context.Background(), polyloop.EnvSpec{RunID: "demo-probe", Image: "busybox"}); err == nil {
			e.Destroy(context.Background())
		}
	}
	if err != nil {
		return "", fmt.Sprintf("a sandbox that starts on this machine (bubblewrap with unprivileged user namespaces and overlayfs, Linux 5.11 or later): %v", err)
	}
	return images, ""
}

// buildBusyboxImage makes DIR/busybox/rootfs from a statically linked
// /bin/busybox, as .ci/env-images does.
func buildBusyboxImage(dir string) error {
	const busybox = "/bin/busybox"
	f, err := elf.Open(busybox)
	if err != nil {
		return err
	}
	static := true
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			static = false
		}
	}
	f.Close()
	if !static {
		return errors.New("/bin/busybox is not statically linked")
	}
	root := filepath.Join(dir, "busybox", "rootfs")
	for _, d := range []string{"bin", "sbin", "usr/bin", "usr/sbin", "etc", "root", "tmp", "proc", "dev", "sys", "work"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			return err
		}
	}
	raw, err := os.ReadFile(busybox)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(root, "bin", "busybox"), raw, 0o755); err != nil {
		return err
	}
	list, err := exec.Command(busybox, "--list").Output()
	if err != nil {
		return err
	}
	for _, applet := range strings.Fields(string(list)) {
		if applet != "busybox" {
			if err := os.Symlink("busybox", filepath.Join(root, "bin", applet)); err != nil {
				return err
			}
		}
	}
	return os.WriteFile(filepath.Join(root, "etc", "passwd"), []byte("root:x:0:0:root:/root:/bin/sh\n"), 0o644)
}

// demoAgentOptions are the agent-file options of the demo's processes:
// with the sandbox, its provider keeps environments and snapshots in the
// demo's directory.
func demoAgentOptions(dir, images string) *agentfile.Options {
	opts := oneRun()
	if images == "" {
		return opts
	}
	opts.Environments = func(string) (polyloop.EnvProvider, error) {
		snaps, err := snapshotstore.OpenDir(filepath.Join(dir, "snapshots"))
		if err != nil {
			return nil, err
		}
		return bwrapenv.New(bwrapenv.Options{Images: images, StateDir: filepath.Join(dir, "envs"), Snapshots: snaps})
	}
	return opts
}

// demoShowJournal prints the journal as the run's last snapshot holds it.
func (a *app) demoShowJournal(ctx context.Context, cfg *agentfile.Config, log polyloop.RunLog) error {
	ref := polyloop.LastEnvSnapshot(log)
	e, err := cfg.Environments.Create(ctx, polyloop.EnvSpec{RunID: demoRunID + "-show", Image: "busybox", From: ref})
	if err != nil {
		return err
	}
	defer e.Destroy(context.WithoutCancel(ctx))
	res, err := e.Exec(ctx, polyloop.ExecRequest{Argv: []string{"cat", "/work/journal.txt"}})
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "\n== 6. /work/journal.txt in the sandbox, as the run's last snapshot (%s) holds it\n", ref.Short())
	for _, line := range strings.Split(strings.TrimRight(string(res.Stdout), "\n"), "\n") {
		fmt.Fprintf(a.stdout, "   | %s\n", line)
	}
	return nil
}
