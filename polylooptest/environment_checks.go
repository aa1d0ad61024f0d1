package polylooptest

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/polyloop/polyloop"
)

func checkEnvExec(e *env, h EnvHarness) error {
	en, err := create(e, h.New(e.t), polyloop.EnvSpec{RunID: kitRun(e, "exec"), Image: h.Image})
	if err != nil {
		return err
	}
	argv := []string{"sh", "-c", `printf '%s|' "$@"; echo "$KIT_VAR"; pwd; cat; echo oops >&2`, "zero", "a b", `"q'`, ""}
	r, err := en.Exec(e.ctx, polyloop.ExecRequest{Argv: argv, Dir: "/tmp", Env: []string{"KIT_VAR=v=1"}, Stdin: []byte("from stdin\n")})
	if err != nil {
		return fmt.Errorf("Exec: %w", err)
	}
	want := "a b|\"q'||v=1\n/tmp\nfrom stdin\n"
	if string(r.Stdout) != want || string(r.Stderr) != "oops\n" || r.ExitCode != 0 {
		return fmt.Errorf("Exec %q = exit %d, stdout %q, stderr %q; want exit 0, stdout %q, stderr %q", argv, r.ExitCode, r.Stdout, r.Stderr, want, "oops\n")
	}
	return nil
}

func checkEnvWorkDir(e *env, h EnvHarness) error {
	const dir = "/kit-workdir/sub" // not in the image (EnvHarness.Image)
	en, err := create(e, h.New(e.t), polyloop.EnvSpec{RunID: kitRun(e, "workdir"), Image: h.Image, WorkDir: dir})
	if err != nil {
		return err
	}
	r, err := en.Exec(e.ctx, polyloop.ExecRequest{Argv: []string{"sh", "-c", "pwd; echo x > here && cat here"}})
	if err != nil {
		return fmt.Errorf("Exec in the working directory %s: %w", dir, err)
	}
	if want := dir + "\nx\n"; r.ExitCode != 0 || string(r.Stdout) != want {
		return fmt.Errorf("Exec with WorkDir %s (not in the image) = exit %d, stdout %q, stderr %q; want exit 0, stdout %q",
			dir, r.ExitCode, r.Stdout, r.Stderr, want)
	}
	return nil
}

func checkEnvExitIsResult(e *env, h EnvHarness) error {
	en, err := create(e, h.New(e.t), polyloop.EnvSpec{RunID: kitRun(e, "exit"), Image: h.Image})
	if err != nil {
		return err
	}
	r, err := en.Exec(e.ctx, polyloop.ExecRequest{Argv: []string{"sh", "-c", "echo partial; exit 3"}})
	if err != nil || r.ExitCode != 3 || string(r.Stdout) != "partial\n" {
		return fmt.Errorf("a command exiting 3: %+v, %v; want exit 3 with its output and a nil error", r, err)
	}
	r, err = en.Exec(e.ctx, polyloop.ExecRequest{Argv: []string{"/no/such/command"}})
	if err != nil || r.ExitCode == 0 {
		return fmt.Errorf("a command that does not exist: exit %d, %v; want a non-zero exit and a nil error", r.ExitCode, err)
	}
	if _, err := sh(e, en, "true"); err != nil {
		return fmt.Errorf("after a missing command the environment does not serve: %w", err)
	}
	return nil
}

// execAsync runs req in a goroutine and returns its outcome on a channel.
type execOutcome struct {
	r   polyloop.ExecResult
	err error
}

func execAsync(ctx context.Context, en polyloop.Environment, req polyloop.ExecRequest) <-chan execOutcome {
	ch := make(chan execOutcome, 1)
	go func() {
		r, err := en.Exec(ctx, req)
		ch <- execOutcome{r, err}
	}()
	return ch
}

// The sleeper runs long, under arguments that name it in the process
// table.
const (
	sleeperArgs = "sleep 30.25"
	sleeper     = "exec " + sleeperArgs
)

func checkEnvTimeout(e *env, h EnvHarness) error {
	en, err := create(e, h.New(e.t), polyloop.EnvSpec{RunID: kitRun(e, "timeout"), Image: h.Image})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	ch := execAsync(ctx, en, polyloop.ExecRequest{Argv: []string{"sh", "-c", sleeper}, Timeout: 300 * time.Millisecond})
	var o execOutcome
	select {
	case o = <-ch:
	case <-time.After(5 * time.Second):
		cancel()
		<-ch
		return errors.New("a command with a 300ms timeout still ran 5s later")
	}
	if o.err != nil || !o.r.TimedOut {
		return fmt.Errorf("a command killed at its timeout: %+v, %v; want TimedOut and a nil error", o.r, o.err)
	}
	ok, err := gone(e, en)
	if err != nil {
		return err
	}
	if !ok {
		return broke(ruleEnvKillsCommand, "the command timed out but still runs")
	}
	return nil
}

func checkEnvCancelled(e *env, h EnvHarness) error {
	en, err := create(e, h.New(e.t), polyloop.EnvSpec{RunID: kitRun(e, "cancel"), Image: h.Image})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(e.ctx)
	ch := execAsync(ctx, en, polyloop.ExecRequest{Argv: []string{"sh", "-c", sleeper}})
	time.Sleep(300 * time.Millisecond)
	cancel()
	var o execOutcome
	select {
	case o = <-ch:
	case <-time.After(e.cancelWithin):
		return broke(ruleCancelPromptly, "Exec did not return within %v of its context's cancellation", e.cancelWithin)
	}
	if !errors.Is(o.err, context.Canceled) {
		return broke(ruleCancelError, "a cancelled Exec returned %+v, %v; want an error that wraps context.Canceled", o.r, o.err)
	}
	ok, err := gone(e, en)
	if err != nil {
		return tag(ruleEnvKillsCommand, fmt.Errorf("after a cancelled Exec the environment does not serve: %w", err))
	}
	if !ok {
		return broke(ruleEnvKillsCommand, "the Exec was cancelled but its command still runs")
	}
	return nil
}

func checkEnvOutputLimit(e *env, h EnvHarness) error {
	en, err := create(e, h.New(e.t), polyloop.EnvSpec{RunID: kitRun(e, "limit"), Image: h.Image})
	if err != nil {
		return err
	}
	r, err := en.Exec(e.ctx, polyloop.ExecRequest{Argv: []string{"sh", "-c", "head -c 100000 /dev/zero; head -c 5000 /dev/zero >&2"}, OutputLimit: 1000})
	if err != nil {
		return err
	}
	if len(r.Stdout) != 1000 || r.StdoutDropped != 99000 || len(r.Stderr) != 1000 || r.StderrDropped != 4000 {
		return fmt.Errorf("100000 and 5000 bytes with OutputLimit 1000: kept %d and %d, dropped %d and %d; want 1000 each, 99000 and 4000 dropped",
			len(r.Stdout), len(r.Stderr), r.StdoutDropped, r.StderrDropped)
	}
	return nil
}

func tarOf(files map[string]string) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if target, ok := strings.CutPrefix(files[n], "->"); ok {
			tw.WriteHeader(&tar.Header{Name: n, Typeflag: tar.TypeSymlink, Linkname: target, ModTime: time.Unix(1e9, 0)})
			continue
		}
		tw.WriteHeader(&tar.Header{Name: n, Mode: 0o640, Size: int64(len(files[n])), ModTime: time.Unix(1e9, 0)})
		tw.Write([]byte(files[n]))
	}
	tw.Close()
	return buf.Bytes()
}

// untar lists a tar stream: name → content ("->target" for a link, "/"
// for a directory).
func untar(data []byte) (map[string]string, error) {
	out := map[string]string{}
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		name := strings.TrimSuffix(strings.TrimPrefix(h.Name, "./"), "/")
		switch h.Typeflag {
		case tar.TypeDir:
			out[name] = "/"
		case tar.TypeSymlink:
			out[name] = "->" + h.Linkname
		default:
			b, _ := io.ReadAll(tr)
			out[name] = string(b)
		}
	}
}

func checkEnvCopy(e *env, h EnvHarness) error {
	en, err := create(e, h.New(e.t), polyloop.EnvSpec{RunID: kitRun(e, "copy"), Image: h.Image})
	if err != nil {
		return err
	}
	in := map[string]string{"kit/a.txt": "alpha\n", "kit/sub/b.txt": "beta", "kit/link": "->a.txt"}
	if err := en.CopyIn(e.ctx, "/work/in", bytes.NewReader(tarOf(in))); err != nil {
		return fmt.Errorf("CopyIn: %w", err)
	}
	got, err := sh(e, en, "cat /work/in/kit/a.txt /work/in/kit/sub/b.txt /work/in/kit/link")
	if err != nil {
		return err
	}
	if got != "alpha\nbetaalpha\n" {
		return fmt.Errorf("after CopyIn the files read %q", got)
	}
	var buf bytes.Buffer
	if err := en.CopyOut(e.ctx, "/work/in/kit", &buf); err != nil {
		return fmt.Errorf("CopyOut: %w", err)
	}
	out, err := untar(buf.Bytes())
	if err != nil {
		return fmt.Errorf("CopyOut gave no tar stream: %w", err)
	}
	for n, want := range in {
		if out[n] != want {
			return fmt.Errorf("CopyOut of /work/in/kit: %s is %q, want %q (all: %q)", n, out[n], want, out)
		}
	}
	err = en.CopyOut(e.ctx, "/work/in/no-such-file", io.Discard)
	if !errors.Is(err, fs.ErrNotExist) || polyloop.EnvCannotServe(err) {
		return fmt.Errorf("CopyOut of a missing path: %v; want fs.ErrNotExist, not a failure of the environment", err)
	}
	return nil
}

func checkEnvFiles(e *env, h EnvHarness) error {
	files := []polyloop.EnvFile{{Path: "/work/task/run.sh", Mode: 0o755, Content: []byte("#!/bin/sh\necho ran\n")}, {Path: "/work/task/data.txt", Content: []byte("data")}}
	en, err := create(e, h.New(e.t), polyloop.EnvSpec{RunID: kitRun(e, "files"), Image: h.Image, Files: files})
	if err != nil {
		return err
	}
	got, err := sh(e, en, "/work/task/run.sh; cat /work/task/data.txt; stat -c ' %a' /work/task/run.sh /work/task/data.txt")
	if err != nil {
		return err
	}
	if got != "ran\ndata 755\n 644\n" {
		return fmt.Errorf("the spec's files read %q", got)
	}
	d := en.Description()
	if len(d.Files) != 2 || d.Files[0].Path != "/work/task/data.txt" || d.Files[0].SHA256 != strings.TrimPrefix(polyloop.DigestOf([]byte("data")), "sha256:") {
		return fmt.Errorf("the description's files are %+v", d.Files)
	}
	return nil
}

func checkEnvDescription(e *env, h EnvHarness) error {
	p := h.New(e.t)
	spec := polyloop.EnvSpec{RunID: kitRun(e, "desc"), Image: h.Image, HostEnv: []string{"KIT_B", "KIT_A"}}
	described, err := p.Describe(e.ctx, spec)
	if err != nil {
		return fmt.Errorf("Describe: %w", err)
	}
	a, err := create(e, p, spec)
	if err != nil {
		return err
	}
	spec.RunID += "-2"
	b, err := create(e, p, spec)
	if err != nil {
		return err
	}
	da, db := a.Description(), b.Description()
	if err := da.Validate(); err != nil || da.Network != polyloop.NetworkNone {
		return fmt.Errorf("description %+v: %v (want a backend, an image digest, network none)", da, err)
	}
	ca, _ := da.Canonical()
	cb, _ := db.Canonical()
	cd, _ := described.Canonical()
	if string(ca) != string(cb) || string(ca) != string(cd) {
		return fmt.Errorf("one spec, three descriptions:\n%s\n%s\n%s (Describe)", ca, cb, cd)
	}
	if !slices.Equal(da.HostEnv, []string{"KIT_A", "KIT_B"}) {
		return fmt.Errorf("host variables described as %q, want them sorted", da.HostEnv)
	}
	return nil
}

// worldScript changes a fresh environment: files with contents, modes and
// times, a symbolic link, a directory, a file of the image deleted.
const worldScript = `set -e
mkdir -p /work/w/d
printf 'one\n' > /work/w/a
chmod 0751 /work/w/a
touch -d '2001-02-03 04:05:06' /work/w/a
ln -s a /work/w/l
echo deep > /work/w/d/e
rm /etc/passwd`

const worldReport = `cat /work/w/a; stat -c '%a %Y' /work/w/a; readlink /work/w/l; cat /work/w/d/e; ls /work/w; test -e /etc/passwd && echo passwd || echo no-passwd`

func checkEnvSnapshotRestore(e *env, h EnvHarness) error {
	en, err := create(e, h.New(e.t), polyloop.EnvSpec{RunID: kitRun(e, "snap"), Image: h.Image})
	if err != nil {
		return err
	}
	if _, err := sh(e, en, worldScript); err != nil {
		return err
	}
	want1, err := sh(e, en, worldReport)
	if err != nil {
		return err
	}
	s1, err := en.Snapshot(e.ctx)
	if err != nil {
		return fmt.Errorf("Snapshot: %w", err)
	}
	if _, err := sh(e, en, "set -e; echo two >> /work/w/a; rm /work/w/l; mkdir /work/w/z; rm -r /work/w/d; echo x > /work/w/n"); err != nil {
		return err
	}
	want2, err := sh(e, en, worldReport+"; ls /work/w")
	if err != nil {
		return err
	}
	s2, err := en.Snapshot(e.ctx)
	if err != nil {
		return fmt.Errorf("Snapshot: %w", err)
	}
	if s1 == s2 {
		return fmt.Errorf("two different filesystems gave one snapshot %s", s1)
	}
	for _, c := range []struct {
		ref    polyloop.EnvSnapshot
		report string
		want   string
	}{{s1, worldReport, want1}, {s2, worldReport + "; ls /work/w", want2}, {s1, worldReport, want1}} {
		if err := en.Restore(e.ctx, c.ref); err != nil {
			return fmt.Errorf("Restore: %w", err)
		}
		got, err := en.Exec(e.ctx, polyloop.ExecRequest{Argv: []string{"sh", "-c", c.report}})
		if err != nil {
			return err
		}
		if string(got.Stdout) != c.want {
			return fmt.Errorf("after Restore(%s) the files read\n%s\nwant\n%s", c.ref, got.Stdout, c.want)
		}
	}
	return nil
}

func checkEnvCreateFrom(e *env, h EnvHarness) error {
	p := h.New(e.t)
	spec := polyloop.EnvSpec{RunID: kitRun(e, "from"), Image: h.Image}
	en, err := create(e, p, spec)
	if err != nil {
		return err
	}
	if _, err := sh(e, en, worldScript); err != nil {
		return err
	}
	want, err := sh(e, en, worldReport)
	if err != nil {
		return err
	}
	ref, err := en.Snapshot(e.ctx)
	if err != nil {
		return err
	}
	if err := en.Destroy(e.ctx); err != nil {
		return err
	}
	if h.Reopen != nil {
		p = h.Reopen(e.t, p)
	}
	spec.From = ref
	again, err := create(e, p, spec)
	if err != nil {
		return err
	}
	got, err := sh(e, again, worldReport)
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("an environment created from %s reads\n%s\nwant\n%s", ref, got, want)
	}
	return nil
}

func checkEnvNoProcesses(e *env, h EnvHarness) error {
	en, err := create(e, h.New(e.t), polyloop.EnvSpec{RunID: kitRun(e, "procs"), Image: h.Image})
	if err != nil {
		return err
	}
	ref, err := en.Snapshot(e.ctx)
	if err != nil {
		return err
	}
	if _, err := sh(e, en, "setsid sh -c 'echo $$ > /tmp/bg.pid; exec sleep 300' </dev/null >/dev/null 2>&1 & sleep 0.3; kill -0 $(cat /tmp/bg.pid)"); err != nil {
		return fmt.Errorf("start a process in its own session: %w", err)
	}
	if _, err := sh(e, en, "cp /tmp/bg.pid /bg.pid"); err != nil {
		return err
	}
	if err := en.Restore(e.ctx, ref); err != nil {
		return err
	}
	// The pid file is gone with the restore; the kit wrote the pid where
	// the restored environment cannot see it, so it asks the process table.
	r, err := en.Exec(e.ctx, polyloop.ExecRequest{Argv: []string{"sh", "-c", "ps -o args 2>/dev/null || ps"}})
	if err != nil {
		return err
	}
	if strings.Contains(string(r.Stdout), "sleep 300") {
		return fmt.Errorf("after Restore a process of before still runs:\n%s", r.Stdout)
	}
	return nil
}

func checkEnvSnapshotNotFound(e *env, h EnvHarness) error {
	p := h.New(e.t)
	spec := polyloop.EnvSpec{RunID: kitRun(e, "nosnap"), Image: h.Image}
	en, err := create(e, p, spec)
	if err != nil {
		return err
	}
	if _, err := sh(e, en, "echo kept > /tmp/kept"); err != nil {
		return err
	}
	bogus := polyloop.EnvSnapshot(polyloop.DigestOf([]byte("no such snapshot")))
	if err := en.Restore(e.ctx, bogus); !errors.Is(err, polyloop.ErrEnvSnapshotNotFound) {
		return fmt.Errorf("Restore of a snapshot the store does not hold: %v", err)
	}
	if got, err := sh(e, en, "cat /tmp/kept"); err != nil || got != "kept\n" {
		return fmt.Errorf("after a failed Restore the environment changed: %q, %v", got, err)
	}
	spec.RunID += "-from"
	spec.From = bogus
	if other, err := p.Create(e.ctx, spec); !errors.Is(err, polyloop.ErrEnvSnapshotNotFound) {
		if other != nil {
			other.Destroy(context.Background())
		}
		return fmt.Errorf("Create From a snapshot the store does not hold: %v", err)
	}
	return nil
}

const canaryValue = "polyloop-kit-canary-9f2c1"

func checkEnvIsolated(e *env, h EnvHarness) error {
	os.Setenv("POLYLOOP_KIT_SECRET", canaryValue)
	defer os.Unsetenv("POLYLOOP_KIT_SECRET")
	hostFile := filepath.Join(e.t.TempDir(), "host-secret.txt")
	if err := os.WriteFile(hostFile, []byte(canaryValue), 0o644); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", ":0")
	if err != nil {
		return err
	}
	defer ln.Close()
	var mu sync.Mutex
	reached := 0
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			reached++
			mu.Unlock()
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	en, err := create(e, h.New(e.t), polyloop.EnvSpec{RunID: kitRun(e, "iso"), Image: h.Image})
	if err != nil {
		return err
	}
	script := `cat /proc/*/environ 2>/dev/null; env; cat ` + hostFile + ` 2>/dev/null; echo; cat /proc/$PPID/environ >/dev/null 2>&1 && echo READ-PPID-ENVIRON`
	r, err := en.Exec(e.ctx, polyloop.ExecRequest{Argv: []string{"sh", "-c", script}})
	if err != nil {
		return err
	}
	if strings.Contains(string(r.Stdout), canaryValue) {
		return fmt.Errorf("a variable or file of the host is visible inside:\n%s", r.Stdout)
	}
	if strings.Contains(string(r.Stdout), "READ-PPID-ENVIRON") {
		return errors.New("the command read /proc/$PPID/environ")
	}
	for _, addr := range hostAddrs() {
		script := fmt.Sprintf("nc -w 1 %s %d </dev/null; wget -q -T 1 -O /dev/null http://%s/", addr, port, net.JoinHostPort(addr, fmt.Sprint(port)))
		en.Exec(e.ctx, polyloop.ExecRequest{Argv: []string{"sh", "-c", script}, Timeout: 5 * time.Second})
	}
	time.Sleep(100 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if reached > 0 {
		return fmt.Errorf("a listener of the host was reached %d times from an environment without network", reached)
	}
	return nil
}

// hostAddrs are the host's IPv4 addresses, loopback first.
func hostAddrs() []string {
	out := []string{"127.0.0.1"}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			out = append(out, n.IP.String())
		}
	}
	return out
}

func checkEnvAllowed(e *env, h EnvHarness) error {
	os.Setenv("POLYLOOP_KIT_ALLOWED", "allowed-value")
	defer os.Unsetenv("POLYLOOP_KIT_ALLOWED")
	dir := e.t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "shared.txt"), []byte("shared"), 0o644); err != nil {
		return err
	}
	en, err := create(e, h.New(e.t), polyloop.EnvSpec{RunID: kitRun(e, "allowed"), Image: h.Image,
		HostEnv: []string{"POLYLOOP_KIT_ALLOWED", "POLYLOOP_KIT_UNSET"}, Mounts: []polyloop.EnvMount{{Source: dir, Target: "/mnt/host"}}})
	if err != nil {
		return err
	}
	got, err := sh(e, en, `echo "$POLYLOOP_KIT_ALLOWED"; cat /mnt/host/shared.txt; echo; echo x > /mnt/host/new 2>/dev/null && echo WROTE; true`)
	if err != nil {
		return err
	}
	if got != "allowed-value\nshared\n" {
		return fmt.Errorf("with a variable and a read-only mount allowed, the environment reads %q", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "new")); err == nil {
		return errors.New("a read-only mount was written")
	}
	return nil
}

func checkEnvDestroy(e *env, h EnvHarness) error {
	p := h.New(e.t)
	run := kitRun(e, "destroy")
	en, err := p.Create(e.ctx, polyloop.EnvSpec{RunID: run, Image: h.Image})
	if err != nil {
		return err
	}
	if err := en.Destroy(e.ctx); err != nil {
		return fmt.Errorf("Destroy: %w", err)
	}
	if _, err := en.Exec(e.ctx, polyloop.ExecRequest{Argv: []string{"true"}}); !isLost(err) {
		return fmt.Errorf("Exec after Destroy: %v, want ErrEnvLost", err)
	}
	if err := en.Destroy(e.ctx); err != nil {
		return fmt.Errorf("Destroy twice: %w", err)
	}
	if h.Leftovers != nil {
		if left := h.Leftovers(e.t, p, run); len(left) > 0 {
			return fmt.Errorf("after Destroy, left: %q", left)
		}
	}
	return nil
}

func checkEnvImageNotFound(e *env, h EnvHarness) error {
	p := h.New(e.t)
	run := kitRun(e, "noimage")
	en, err := p.Create(e.ctx, polyloop.EnvSpec{RunID: run, Image: "polyloop-kit-no-such-image"})
	if en != nil {
		en.Destroy(context.Background())
	}
	if !errors.Is(err, polyloop.ErrImageNotFound) || !polyloop.EnvCannotServe(err) {
		return fmt.Errorf("Create from a missing image: %v, want ErrImageNotFound", err)
	}
	if h.Leftovers != nil {
		if left := h.Leftovers(e.t, p, run); len(left) > 0 {
			return fmt.Errorf("a failed Create left: %q", left)
		}
	}
	return nil
}

func checkEnvInvalid(e *env, h EnvHarness) error {
	en, err := create(e, h.New(e.t), polyloop.EnvSpec{RunID: kitRun(e, "invalid"), Image: h.Image})
	if err != nil {
		return err
	}
	for _, req := range []polyloop.ExecRequest{{}, {Argv: []string{"true"}, Dir: "relative/dir"}} {
		_, err := en.Exec(e.ctx, req)
		if !errors.Is(err, polyloop.ErrEnvInvalid) || polyloop.EnvCannotServe(err) {
			return fmt.Errorf("Exec(%+v): %v, want ErrEnvInvalid (not a failure of the environment)", req, err)
		}
	}
	if _, err := sh(e, en, "true"); err != nil {
		return err
	}
	return nil
}

func checkEnvLimits(e *env, h EnvHarness) error {
	if !h.Limits {
		return skipf("the harness says the backend enforces no limits here")
	}
	en, err := create(e, h.New(e.t), polyloop.EnvSpec{RunID: kitRun(e, "limits"), Image: h.Image,
		Limits: polyloop.EnvLimits{MemoryBytes: 64 << 20, PIDs: 16}})
	if err != nil {
		return err
	}
	r, err := en.Exec(e.ctx, polyloop.ExecRequest{Argv: []string{"sh", "-c", "x=$(head -c 200000000 /dev/zero | tr '\\0' a); echo ${#x}"}, Timeout: 30 * time.Second})
	if err != nil {
		return err
	}
	if r.ExitCode == 0 && strings.TrimSpace(string(r.Stdout)) == "200000000" {
		return errors.New("a command held 200 MB under a 64 MB memory limit")
	}
	// Forty processes that each say they started, then stay: a shell
	// aborts when it cannot fork, hence the subshell around the loop. The
	// same shell then counts them with builtins alone (while they stay, the
	// limit leaves no process for another exec or a wc), waiting until one
	// has said so: a backend may kill the command's process group when it
	// ends, on a loaded machine before any had.
	start := "(for i in $(seq 40); do (echo x >> /tmp/started; exec sleep 3) & done) 2>/dev/null; " +
		"n=0; while [ $n -lt 1 ]; do n=0; while read -r _; do n=$((n+1)); done < /tmp/started; done 2>/dev/null; echo $n"
	r, err = en.Exec(e.ctx, polyloop.ExecRequest{Argv: []string{"sh", "-c", start}, Timeout: 30 * time.Second})
	if err != nil {
		return err
	}
	got := strings.TrimSpace(string(r.Stdout))
	var n int
	fmt.Sscan(got, &n)
	if n == 0 || n > 16 {
		return fmt.Errorf("under a limit of 16 processes, %q of 40 processes started", got)
	}
	return nil
}

func checkEnvConcurrent(e *env, h EnvHarness) error {
	p := h.New(e.t)
	envs := make([]polyloop.Environment, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range envs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			envs[i], errs[i] = create(e, p, polyloop.EnvSpec{RunID: kitRun(e, fmt.Sprint("conc", i)), Image: h.Image})
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if _, err := sh(e, envs[0], "echo mine > /tmp/only-in-0"); err != nil {
		return err
	}
	if got, err := sh(e, envs[1], "cat /tmp/only-in-0 2>/dev/null; true"); err != nil || got != "" {
		return broke(ruleEnvRunsIsolated, "one run's environment reads another's file: %q, %v", got, err)
	}
	results := make([]error, 6)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			want := fmt.Sprintf("exec %d", i)
			got, err := sh(e, envs[0], fmt.Sprintf("echo '%s' > /tmp/c%d; sleep 0.1; cat /tmp/c%d", want, i, i))
			if err == nil && trimmed(got) != want {
				err = fmt.Errorf("concurrent exec %d got %q", i, got)
			}
			results[i] = err
		}()
	}
	wg.Wait()
	return errors.Join(results...)
}

// checkEnvFresh: environments created one after another from one provider
// and one spec (as a sweep creates them) hold nothing of the ones before —
// what a provider that starts environments ahead (a pool) must keep true:
// an environment serves one Create.
func checkEnvFresh(e *env, h EnvHarness) error {
	p := h.New(e.t)
	used, err := p.Create(e.ctx, polyloop.EnvSpec{RunID: kitRun(e, "fresh-used"), Image: h.Image})
	if err != nil {
		return fmt.Errorf("Create: %w", err)
	}
	_, err = sh(e, used, "echo earlier > /tmp/left-by-an-earlier-run; setsid sh -c 'exec sleep 300.5' </dev/null >/dev/null 2>&1 &")
	if derr := used.Destroy(e.ctx); err == nil && derr != nil {
		err = fmt.Errorf("Destroy: %w", derr)
	}
	if err != nil {
		return err
	}
	defer os.Unsetenv("POLYLOOP_KIT_FRESH")
	for i := range 3 {
		spec := polyloop.EnvSpec{RunID: kitRun(e, fmt.Sprint("fresh-", i)), Image: h.Image, HostEnv: []string{"POLYLOOP_KIT_FRESH"}}
		if i == 1 {
			spec.Files = []polyloop.EnvFile{{Path: "/tmp/mine", Content: []byte("mine")}}
		}
		os.Setenv("POLYLOOP_KIT_FRESH", fmt.Sprint("value-", i)) // read at Create, not before
		en, err := create(e, p, spec)
		if err != nil {
			return err
		}
		got, err := sh(e, en, "cat /tmp/left-by-an-earlier-run 2>/dev/null; ls /tmp; (ps -o args 2>/dev/null || ps) | grep -c 'sleep 300[.]5'; echo $POLYLOOP_KIT_FRESH")
		if err != nil {
			return err
		}
		want := "0\nvalue-" + fmt.Sprint(i) + "\n"
		if i == 1 {
			want = "mine\n" + want
		}
		if got != want {
			return broke(ruleEnvFresh, "environment %d after one that was used and destroyed: `cat the earlier run's file; ls /tmp; count its process; echo a host variable` gave %q, want %q", i, got, want)
		}
		if i == 1 {
			// A second environment while this one is held: not this one.
			if _, err := sh(e, en, "echo held > /tmp/held"); err != nil {
				return err
			}
		}
	}
	return nil
}
