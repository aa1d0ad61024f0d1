//go:build linux

package bwrapenv

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/polyloop/polyloop"
)

// cgroup enforces an environment's limits: a child of the driver's own
// cgroup (so that it is accounted wherever the driver is), in the unified
// hierarchy (cgroup v2) when its controllers can be enabled there, or in
// the v1 hierarchies of the memory, pids and cpu controllers.
type cgroup struct {
	dirs []string
}

// newCgroup makes the cgroup name with limits l. A host where neither
// works (no permission to write the driver's cgroup, controllers missing)
// is ErrEnvUnsupported: limits are never silently dropped.
func newCgroup(name string, l polyloop.EnvLimits) (*cgroup, error) {
	own, err := ownCgroups()
	if err != nil {
		return nil, err
	}
	if p, ok := own[""]; ok && isV2Root("/sys/fs/cgroup") {
		c, err := newCgroupV2(filepath.Join("/sys/fs/cgroup", p), name, l)
		if err == nil {
			return c, nil
		}
		return nil, fmt.Errorf("%w: cgroup v2: %v", polyloop.ErrEnvUnsupported, err)
	}
	c, err := newCgroupV1(own, name, l)
	if err != nil {
		return nil, fmt.Errorf("%w: cgroup v1: %v", polyloop.ErrEnvUnsupported, err)
	}
	return c, nil
}

func isV2Root(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "cgroup.controllers"))
	return err == nil
}

// ownCgroups maps each controller of /proc/self/cgroup to this process's
// cgroup path ("" is the unified hierarchy).
func ownCgroups() (map[string]string, error) {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, ctl := range strings.Split(parts[1], ",") {
			out[ctl] = parts[2]
		}
	}
	return out, sc.Err()
}

func newCgroupV2(parent, name string, l polyloop.EnvLimits) (*cgroup, error) {
	var want []string
	if l.CPUs > 0 {
		want = append(want, "+cpu")
	}
	if l.MemoryBytes > 0 {
		want = append(want, "+memory")
	}
	if l.PIDs > 0 {
		want = append(want, "+pids")
	}
	if err := os.WriteFile(filepath.Join(parent, "cgroup.subtree_control"), []byte(strings.Join(want, " ")), 0); err != nil {
		return nil, fmt.Errorf("enable %v under %s (a cgroup with processes cannot delegate; run the driver in a delegated cgroup): %w", want, parent, err)
	}
	dir := filepath.Join(parent, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	c := &cgroup{dirs: []string{dir}}
	files := map[string]string{}
	if l.CPUs > 0 {
		files["cpu.max"] = fmt.Sprintf("%d 100000", int64(l.CPUs*100000))
	}
	if l.MemoryBytes > 0 {
		files["memory.max"] = strconv.FormatInt(l.MemoryBytes, 10)
		files["memory.swap.max"] = "0"
	}
	if l.PIDs > 0 {
		files["pids.max"] = strconv.FormatInt(l.PIDs, 10)
	}
	return c, c.write(dir, files)
}

func newCgroupV1(own map[string]string, name string, l polyloop.EnvLimits) (*cgroup, error) {
	c := &cgroup{}
	type ctl struct {
		name  string
		files [][2]string
	}
	var ctls []ctl
	if l.MemoryBytes > 0 {
		v := strconv.FormatInt(l.MemoryBytes, 10)
		ctls = append(ctls, ctl{"memory", [][2]string{{"memory.limit_in_bytes", v}, {"memory.memsw.limit_in_bytes", v}}})
	}
	if l.PIDs > 0 {
		ctls = append(ctls, ctl{"pids", [][2]string{{"pids.max", strconv.FormatInt(l.PIDs, 10)}}})
	}
	if l.CPUs > 0 {
		ctls = append(ctls, ctl{"cpu", [][2]string{{"cpu.cfs_period_us", "100000"}, {"cpu.cfs_quota_us", strconv.FormatInt(int64(l.CPUs*100000), 10)}}})
	}
	for _, k := range ctls {
		p, ok := own[k.name]
		if !ok {
			c.remove()
			return nil, fmt.Errorf("no %s controller", k.name)
		}
		mount, err := v1Mount(k.name)
		if err != nil {
			c.remove()
			return nil, err
		}
		dir := filepath.Join(mount, p, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			c.remove()
			return nil, err
		}
		c.dirs = append(c.dirs, dir)
		for _, f := range k.files {
			path := filepath.Join(dir, f[0])
			if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) && f[0] == "memory.memsw.limit_in_bytes" {
				continue // no swap accounting: memory alone
			}
			if err := os.WriteFile(path, []byte(f[1]), 0); err != nil {
				c.remove()
				return nil, fmt.Errorf("%s: %w", f[0], err)
			}
		}
	}
	return c, nil
}

// v1Mount finds where the v1 hierarchy of controller is mounted.
func v1Mount(controller string) (string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		sep := -1
		for i, fl := range fields {
			if fl == "-" {
				sep = i
				break
			}
		}
		if sep < 0 || sep+3 >= len(fields) || fields[sep+1] != "cgroup" {
			continue
		}
		for _, o := range strings.Split(fields[sep+3], ",") {
			if o == controller {
				return fields[4], nil
			}
		}
	}
	return "", fmt.Errorf("the %s controller is not mounted", controller)
}

func (c *cgroup) write(dir string, files map[string]string) error {
	for name, v := range files {
		p := filepath.Join(dir, name)
		if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) && name == "memory.swap.max" {
			continue
		}
		if err := os.WriteFile(p, []byte(v), 0); err != nil {
			c.remove()
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

// add moves pid into the cgroup.
func (c *cgroup) add(pid int) error {
	for _, d := range c.dirs {
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			return err
		}
	}
	return nil
}

// remove kills what is left in the cgroup and removes it.
func (c *cgroup) remove() {
	for _, d := range c.dirs {
		removeCgroupDir(d)
	}
	c.dirs = nil
}

func removeCgroupDir(d string) {
	for i := 0; i < 50; i++ {
		raw, err := os.ReadFile(filepath.Join(d, "cgroup.procs"))
		if err != nil {
			return
		}
		pids := strings.Fields(string(raw))
		if len(pids) == 0 {
			break
		}
		for _, p := range pids {
			if n, err := strconv.Atoi(p); err == nil {
				syscall.Kill(n, syscall.SIGKILL)
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	os.Remove(d)
}
