package polyloop

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"sort"
)

// EnvDescription is what an environment is, for the run's parameter
// snapshot (Snapshot.Environment) and its hash: two runs whose
// descriptions are equal ran in the same image, under the same limits and
// network policy, with the same files copied in. Secrets never enter it:
// host variables are named, not valued.
type EnvDescription struct {
	// Backend names the provider ("bwrap", "docker").
	Backend string `json:"backend"`
	// Image is the image's content digest ("sha256:...").
	Image string `json:"image"`
	// Limits, zero fields omitted.
	Limits EnvLimits `json:"limits,omitzero"`
	// Network is the normalized policy ("none" or "open").
	Network NetworkPolicy `json:"network"`
	// Files copied in at creation, by path, with their content's digest.
	Files []EnvFileDigest `json:"files,omitempty"`
	// HostEnv names the host variables every Exec sees, sorted.
	HostEnv []string `json:"host_env,omitempty"`
	// Mounts are the read-only host mounts, by target.
	Mounts []EnvMount `json:"mounts,omitempty"`
	// WorkDir is the default working directory ("/" omitted).
	WorkDir string `json:"workdir,omitempty"`
}

// EnvFileDigest describes a file copied in: its path, its permission bits
// and the SHA-256 of its content.
type EnvFileDigest struct {
	Path   string `json:"path"`
	Mode   uint32 `json:"mode"`
	SHA256 string `json:"sha256"`
}

// Describe is the description of an environment of this spec made by
// backend from the image digest: the shared part of every provider's
// Describe, so that all of them normalize alike (sorted files, host
// variables and mounts; the zero network policy read as "none"; mode 0644
// for files that name none; "/" as no working directory).
func (s EnvSpec) Describe(backend, imageDigest string) EnvDescription {
	d := EnvDescription{
		Backend: backend,
		Image:   imageDigest,
		Limits:  s.Limits,
		Network: s.Network.Normalize(),
		WorkDir: s.WorkDir,
	}
	if d.WorkDir == "/" {
		d.WorkDir = ""
	}
	for _, f := range s.Files {
		sum := sha256.Sum256(f.Content)
		d.Files = append(d.Files, EnvFileDigest{Path: path.Clean(f.Path), Mode: uint32(f.Perm()), SHA256: hex.EncodeToString(sum[:])})
	}
	sort.Slice(d.Files, func(i, j int) bool { return d.Files[i].Path < d.Files[j].Path })
	d.HostEnv = append([]string(nil), s.HostEnv...)
	sort.Strings(d.HostEnv)
	d.Mounts = append([]EnvMount(nil), s.Mounts...)
	sort.Slice(d.Mounts, func(i, j int) bool { return d.Mounts[i].Target < d.Mounts[j].Target })
	if len(d.HostEnv) == 0 {
		d.HostEnv = nil
	}
	if len(d.Mounts) == 0 {
		d.Mounts = nil
	}
	return d
}

// Perm is the file's permission bits, 0644 when it names none.
func (f EnvFile) Perm() fs.FileMode {
	if f.Mode.Perm() == 0 {
		return 0o644
	}
	return f.Mode.Perm()
}

// Canonical is the description's canonical JSON: sorted keys, no
// insignificant whitespace, zero-valued optional fields left out (as in the
// parameter snapshot, whose hash covers it).
func (d EnvDescription) Canonical() ([]byte, error) {
	raw, err := json.Marshal(d)
	if err != nil {
		return nil, err
	}
	return canonicalJSON(raw)
}

// Validate reports a description that cannot be a snapshot's: no backend,
// or an image that is not a "sha256:" digest.
func (d EnvDescription) Validate() error {
	if d.Backend == "" {
		return fmt.Errorf("%w: environment description without a backend", ErrEnvInvalid)
	}
	if !IsDigest(d.Image) {
		return fmt.Errorf("%w: environment image %q is not a sha256 digest", ErrEnvInvalid, d.Image)
	}
	return nil
}

// IsDigest reports whether s is "sha256:" and 64 lower-case hex digits.
func IsDigest(s string) bool {
	const p = "sha256:"
	if len(s) != len(p)+64 || s[:len(p)] != p {
		return false
	}
	for _, c := range s[len(p):] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// DigestOf is "sha256:" and the hex SHA-256 of data.
func DigestOf(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}
