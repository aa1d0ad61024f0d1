//go:build linux

package bwrapenv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/procstart"
)

// state is the file each environment's directory holds: which run owns
// it, which process drives it, which bwrap runs it. Prune reads it to find
// the environments whose driver is gone.
type state struct {
	RunID       string   `json:"run_id"`
	Image       string   `json:"image"`
	Host        string   `json:"host"`
	BootID      string   `json:"boot_id"`
	DriverPID   int      `json:"driver_pid"`
	DriverStart uint64   `json:"driver_start"`
	BwrapPID    int      `json:"bwrap_pid,omitempty"`
	BwrapStart  uint64   `json:"bwrap_start,omitempty"`
	Cgroups     []string `json:"cgroups,omitempty"`
	// Pooled: a sandbox started for the provider's pool, which no run has
	// taken yet (RunID is empty). Taking it rewrites the file.
	Pooled bool `json:"pooled,omitempty"`
}

const stateFile = "state.json"

func (e *environment) state() state {
	host, _ := os.Hostname()
	st := state{RunID: e.spec.RunID, Image: e.spec.Image, Host: host, BootID: bootID(), DriverPID: os.Getpid(), DriverStart: procstart.Of(os.Getpid()),
		Pooled: e.spec.RunID == ""}
	if e.desc.Image != "" {
		st.Image = e.desc.Image
	}
	if e.sb != nil {
		st.BwrapPID = e.sb.pid()
		st.BwrapStart = procstart.Of(st.BwrapPID)
	}
	if e.cg != nil {
		st.Cgroups = e.cg.dirs
	}
	return st
}

func writeState(dir string, st state) error {
	raw, err := json.Marshal(st)
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, stateFile+".tmp")
	if err := os.WriteFile(tmp, raw, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, stateFile))
}

func bootID() string {
	raw, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return strings.TrimSpace(string(raw))
}

// Prune removes the environments in StateDir whose driver is gone: a
// driver on this host that no longer runs, or one from before a reboot.
// Environments driven from another host sharing the directory are left
// alone (their host is not this one).
func (p *Provider) Prune(ctx context.Context, dryRun bool) ([]polyloop.EnvOrphan, error) {
	return p.prune(ctx, dryRun, false)
}

func (p *Provider) prune(ctx context.Context, dryRun, spareKept bool) ([]polyloop.EnvOrphan, error) {
	entries, err := os.ReadDir(p.opts.StateDir)
	if err != nil {
		return nil, p.fail("prune", "", nil, err)
	}
	host, _ := os.Hostname()
	boot := bootID()
	var out []polyloop.EnvOrphan
	for _, ent := range entries {
		if err := ctx.Err(); err != nil {
			return out, p.fail("prune", "", nil, err)
		}
		dir := filepath.Join(p.opts.StateDir, ent.Name())
		st, err := readState(dir)
		if err != nil {
			continue // not an environment (or one being created)
		}
		if st.Host != host || (st.BootID == boot && procstart.Alive(st.DriverPID, st.DriverStart)) {
			continue
		}
		o := polyloop.EnvOrphan{Backend: Backend, ID: dir, RunID: st.RunID, Driver: fmt.Sprintf("pid %d on %s", st.DriverPID, st.Host), Kept: isKept(dir)}
		if !dryRun && !(spareKept && o.Kept) {
			if st.BootID == boot && procstart.Alive(st.BwrapPID, st.BwrapStart) {
				// bwrap leads its own process group (a child that never
				// armed its parent-death signal is in it too).
				syscall.Kill(-st.BwrapPID, syscall.SIGKILL)
				if proc, err := os.FindProcess(st.BwrapPID); err == nil {
					proc.Kill()
				}
			} else if st.BootID == boot && st.BwrapPID > 0 {
				// bwrap died with its driver, before its child armed the
				// parent-death signal: the child waits for it for ever, in
				// the group bwrap led.
				p.killStrandedChildren(st.BwrapPID)
			}
			for _, cg := range st.Cgroups {
				removeCgroupDir(cg)
			}
			if err := removeAll(dir); err != nil {
				return out, p.fail("prune", st.RunID, nil, err)
			}
			o.Removed = true
		}
		out = append(out, o)
	}
	return out, nil
}

func readState(dir string) (state, error) {
	var st state
	raw, err := os.ReadFile(filepath.Join(dir, stateFile))
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		return st, err
	}
	if st.RunID == "" && !st.Pooled {
		return st, errors.New("no run id")
	}
	return st, nil
}

// killStrandedChildren kills the processes of process group pgid, whose
// leader (a bwrap) is dead, that run this provider's bubblewrap: the
// children of a bwrap killed during its setup. A group id is not reused while the group has a member, and only
// bwrap's own processes are touched.
func (p *Provider) killStrandedChildren(pgid int) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == pgid {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces, so split after it.
		i := strings.LastIndexByte(string(raw), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(raw[i+1:]))
		if len(f) < 3 || f[2] != strconv.Itoa(pgid) {
			continue
		}
		if exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err != nil || exe != p.opts.Bwrap {
			continue
		}
		syscall.Kill(pid, syscall.SIGKILL)
	}
}
