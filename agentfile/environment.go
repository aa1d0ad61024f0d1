package agentfile

import (
	"fmt"
	"os"
	pathpkg "path"
	"path/filepath"
	"slices"

	"github.com/polyloop/polyloop"
)

// EnvBackends are the environment backends an agent file may name.
var EnvBackends = []string{"bwrap", "docker"}

func (v *validator) environment(f *File) {
	e := f.Environment
	if e == nil {
		return
	}
	p := path{"environment"}
	switch {
	case e.Backend == "":
		v.fail(p.at("backend"), "required: the environment's backend, one of %s", joinOr(EnvBackends))
	case !slices.Contains(EnvBackends, e.Backend):
		v.fail(p.at("backend"), "expected one of %s, found %q", joinOr(EnvBackends), e.Backend)
	}
	if e.Image == "" {
		v.fail(p.at("image"), "required: the image (a directory name under the sandbox's images, or a Docker image)")
	}
	if e.WorkDir != "" && !pathpkg.IsAbs(e.WorkDir) {
		v.fail(p.at("workdir"), "expected an absolute path inside the environment, found %q", e.WorkDir)
	}
	switch e.Network {
	case "", "none", "allow":
	default:
		v.fail(p.at("network"), "expected none or allow, found %q", e.Network)
	}
	if e.Limits.CPUs < 0 {
		v.fail(p.at("limits", "cpus"), "expected zero or a positive number, found %v", e.Limits.CPUs)
	}
	v.nonNegative(p.at("limits", "memory_mb"), e.Limits.MemoryMB)
	v.nonNegative(p.at("limits", "pids"), e.Limits.PIDs)
	v.envNames(p.at("env_allow"), e.EnvAllow)
	for i, m := range e.Mounts {
		if m.Source == "" {
			v.fail(p.at("mounts", i, "source"), "required: the host path to mount read-only")
		}
		if !pathpkg.IsAbs(m.Target) || pathpkg.Clean(m.Target) == "/" {
			v.fail(p.at("mounts", i, "target"), "expected an absolute path inside the environment other than /, found %q", m.Target)
		}
	}
	for i, fl := range e.Files {
		if !pathpkg.IsAbs(fl.Path) {
			v.fail(p.at("files", i, "path"), "expected an absolute path inside the environment, found %q", fl.Path)
		}
		if fl.Content != "" && fl.From != "" {
			v.fail(p.at("files", i, "from"), "give the file's content either inline (content) or from a host file (from), not both")
		}
	}
	if s := f.Tools.Shell; s != nil {
		sp := path{"tools", "shell"}
		if len(s.EnvAllow) > 0 {
			v.fail(sp.at("env_allow"), "the shell runs inside the environment: name the host variables it may see in environment.env_allow")
		}
		if s.Dir != "" && !pathpkg.IsAbs(s.Dir) {
			v.fail(sp.at("dir"), "the shell runs inside the environment: dir is a directory inside it (absolute), found %q", s.Dir)
		}
		if s.Replay == string(polyloop.RestoreAndReplay) && e.Network == "allow" {
			v.fail(sp.at("replay"), "restore_and_replay needs an environment without network: with network allow, an action's effects may have left it")
		}
	}
}

func joinOr(names []string) string {
	out := ""
	for i, n := range names {
		switch {
		case i == 0:
		case i == len(names)-1:
			out += " or "
		default:
			out += ", "
		}
		out += n
	}
	return out
}

// envSpec builds the run's environment spec from the section (its files
// read from the host).
func (b *builder) envSpec() (*polyloop.EnvSpec, error) {
	e := b.f.Environment
	spec := &polyloop.EnvSpec{
		Image:   e.Image,
		WorkDir: e.WorkDir,
		Limits:  polyloop.EnvLimits{CPUs: e.Limits.CPUs, MemoryBytes: e.Limits.MemoryMB << 20, PIDs: e.Limits.PIDs},
		Network: polyloop.NetworkNone,
		HostEnv: slices.Clone(e.EnvAllow),
	}
	if e.Network == "allow" {
		spec.Network = polyloop.NetworkOpen
	}
	for i, m := range e.Mounts {
		src, err := filepath.Abs(resolve(b.file, m.Source))
		if err != nil {
			return nil, err
		}
		// The backend's Create would refuse it at the run's first action,
		// after a model call: refuse the file now, where it says so.
		if _, err := os.Stat(src); err != nil {
			return nil, b.loc.errorAt(path{"environment", "mounts", i, "source"}, fmt.Sprintf("cannot mount the host path: %v", err))
		}
		spec.Mounts = append(spec.Mounts, polyloop.EnvMount{Source: src, Target: m.Target})
	}
	for i, fl := range e.Files {
		content := []byte(fl.Content)
		if fl.From != "" {
			raw, err := os.ReadFile(resolve(b.file, fl.From))
			if err != nil {
				return nil, b.loc.errorAt(path{"environment", "files", i, "from"}, fmt.Sprintf("cannot read the file: %v", err))
			}
			content = raw
		}
		mode := os.FileMode(0o644)
		if fl.Executable {
			mode = 0o755
		}
		spec.Files = append(spec.Files, polyloop.EnvFile{Path: fl.Path, Mode: mode, Content: content})
	}
	return spec, nil
}
