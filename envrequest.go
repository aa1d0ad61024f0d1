package polyloop

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// Validate reports a spec no backend can create (wrapped in
// ErrEnvInvalid by the caller's EnvOpError): no run id, an unknown network
// policy, negative limits, relative paths, a mount over the root. Every
// backend calls it, so that all refuse alike.
func (s EnvSpec) Validate() error {
	if s.RunID == "" {
		return errors.New("no run id")
	}
	switch s.Network.Normalize() {
	case NetworkNone, NetworkOpen:
	default:
		return fmt.Errorf("network policy %q", s.Network)
	}
	if s.Limits.CPUs < 0 || s.Limits.MemoryBytes < 0 || s.Limits.PIDs < 0 {
		return fmt.Errorf("negative limits %+v", s.Limits)
	}
	for _, f := range s.Files {
		if !path.IsAbs(f.Path) {
			return fmt.Errorf("file %q is not an absolute path", f.Path)
		}
	}
	for _, m := range s.Mounts {
		if !path.IsAbs(m.Source) || !path.IsAbs(m.Target) {
			return fmt.Errorf("mount %s on %s: paths must be absolute", m.Source, m.Target)
		}
		if path.Clean(m.Target) == "/" {
			return errors.New("a mount cannot hide the root")
		}
	}
	if s.WorkDir != "" && !path.IsAbs(s.WorkDir) {
		return fmt.Errorf("working directory %q is not absolute", s.WorkDir)
	}
	return nil
}

// Validate reports a request no backend can run: an empty argv, a relative
// directory, a variable without "=", a negative timeout.
func (r ExecRequest) Validate() error {
	if len(r.Argv) == 0 || r.Argv[0] == "" {
		return errors.New("empty argv")
	}
	if r.Dir != "" && !path.IsAbs(r.Dir) {
		return fmt.Errorf("working directory %q is not absolute", r.Dir)
	}
	for _, kv := range r.Env {
		if !strings.Contains(kv, "=") {
			return fmt.Errorf("environment entry %q is not NAME=value", kv)
		}
	}
	if r.Timeout < 0 {
		return fmt.Errorf("negative timeout %v", r.Timeout)
	}
	return nil
}

// CommandEnv is a command's environment (Environment.Exec): the image's
// defaults, then the host variables the spec allowed, then the request's,
// a later value of a name replacing an earlier one in its place.
func CommandEnv(image, host, request []string) []string {
	index := map[string]int{}
	var out []string
	for _, layer := range [][]string{image, host, request} {
		for _, kv := range layer {
			name, _, _ := strings.Cut(kv, "=")
			if i, ok := index[name]; ok {
				out[i] = kv
				continue
			}
			index[name] = len(out)
			out = append(out, kv)
		}
	}
	return out
}
