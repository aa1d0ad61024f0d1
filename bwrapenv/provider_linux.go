//go:build linux

package bwrapenv

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/envsnap"
)

// Backend is the name of this backend in environment descriptions.
const Backend = "bwrap"

// Options configure a Provider.
type Options struct {
	// Images is the directory of images: <Images>/<name>/rootfs.
	Images string
	// StateDir is where environments live while they exist: one directory
	// each (the overlay's upper layer and a state file naming the run and
	// the driver). Required.
	StateDir string
	// Snapshots is where snapshots are written and read. Required.
	Snapshots polyloop.BlobStore
	// Bwrap is the bubblewrap executable ("bwrap" in PATH when empty).
	Bwrap string
}

// Provider creates sandboxes: bubblewrap namespaces (user, pid, mount,
// ipc, uts, cgroup, and network unless it is open) over an overlay of an
// image directory, limits through cgroups. It implements
// polyloop.EnvProvider and polyloop.EnvPruner.
type Provider struct {
	opts Options
}

var _ polyloop.EnvProvider = (*Provider)(nil)

// New checks opts and returns a provider.
func New(opts Options) (*Provider, error) {
	if opts.StateDir == "" || opts.Snapshots == nil {
		return nil, fmt.Errorf("%w: bwrapenv needs a StateDir and a Snapshots store", polyloop.ErrInvalidConfig)
	}
	if opts.Bwrap == "" {
		opts.Bwrap = "bwrap"
	}
	bw, err := exec.LookPath(opts.Bwrap)
	if err != nil {
		return nil, fmt.Errorf("%w: bubblewrap: %v", polyloop.ErrEnvUnsupported, err)
	}
	opts.Bwrap = bw
	if err := os.MkdirAll(opts.StateDir, 0o700); err != nil {
		return nil, err
	}
	return &Provider{opts: opts}, nil
}

func (p *Provider) fail(op, runID string, kind, err error) error {
	var oe *polyloop.EnvOpError
	if errors.As(err, &oe) {
		return err
	}
	if kind == nil {
		kind = polyloop.ErrEnvFailed
		for _, k := range []error{polyloop.ErrEnvInvalid, polyloop.ErrImageNotFound, polyloop.ErrEnvSnapshotNotFound,
			polyloop.ErrEnvUnsupported, polyloop.ErrEnvLost, context.Canceled, context.DeadlineExceeded} {
			if errors.Is(err, k) {
				kind = k
				break
			}
		}
		if kind == context.Canceled || kind == context.DeadlineExceeded {
			kind = nil
		}
	}
	return &polyloop.EnvOpError{Op: op, Backend: Backend, RunID: runID, Kind: kind, Err: err}
}

// Describe resolves spec's image and returns the description Create's
// environment will have.
func (p *Provider) Describe(ctx context.Context, spec polyloop.EnvSpec) (polyloop.EnvDescription, error) {
	if err := ctx.Err(); err != nil {
		return polyloop.EnvDescription{}, p.fail("create", spec.RunID, nil, err)
	}
	if err := spec.Validate(); err != nil {
		return polyloop.EnvDescription{}, p.fail("create", spec.RunID, polyloop.ErrEnvInvalid, err)
	}
	im, err := resolveImage(p.opts.Images, spec.Image)
	if err != nil {
		return polyloop.EnvDescription{}, p.fail("create", spec.RunID, nil, err)
	}
	return spec.Describe(Backend, im.digest), nil
}

// Create makes a sandbox for spec.
func (p *Provider) Create(ctx context.Context, spec polyloop.EnvSpec) (polyloop.Environment, error) {
	desc, err := p.Describe(ctx, spec)
	if err != nil {
		return nil, err
	}
	e, err := p.create(ctx, spec, desc)
	if err != nil {
		return nil, p.fail("create", spec.RunID, nil, err)
	}
	return e, nil
}

func (p *Provider) create(ctx context.Context, spec polyloop.EnvSpec, desc polyloop.EnvDescription) (*environment, error) {
	im, err := resolveImage(p.opts.Images, desc.Image)
	if err != nil {
		return nil, err
	}
	var m *envsnap.Manifest
	if spec.From != "" {
		mf, err := envsnap.LoadFor(ctx, p.opts.Snapshots, spec.From, desc.Image)
		if err != nil {
			return nil, err
		}
		// The run created from it holds it too (a fork, until the source
		// lets it go): polyloop.EnvProvider.
		if err := p.opts.Snapshots.Pin(ctx, spec.RunID, string(spec.From)); err != nil {
			return nil, err
		}
		m = &mf
	}
	for _, mt := range spec.Mounts {
		if _, err := os.Stat(mt.Source); err != nil {
			return nil, fmt.Errorf("%w: mount source: %v", polyloop.ErrEnvInvalid, err)
		}
	}
	e := &environment{p: p, spec: cloneSpec(spec), desc: desc, image: im, hostUID: os.Getuid(),
		writer: envsnap.NewWriter(p.opts.Snapshots, spec.RunID, desc.Image)}
	e.dir = filepath.Join(p.opts.StateDir, envID(spec.RunID))
	e.skip = []string{"/proc", "/dev"}
	for _, mt := range spec.Mounts {
		e.skip = append(e.skip, path.Clean(mt.Target))
	}
	ok := false
	defer func() {
		if !ok {
			e.teardown()
		}
	}()
	if err := os.Mkdir(e.dir, 0o700); err != nil {
		return nil, err
	}
	if err := writeState(e.dir, e.state()); err != nil {
		return nil, err
	}
	if spec.Limits != (polyloop.EnvLimits{}) {
		if e.cg, err = newCgroup("polyloop-"+filepath.Base(e.dir), spec.Limits); err != nil {
			return nil, err
		}
	}
	if err := e.boot(ctx, m); err != nil {
		return nil, err
	}
	// A working directory the image lacks is made, as Docker makes one
	// (polyloop.EnvSpec.WorkDir); one From a snapshot is the snapshot's.
	madeWorkDir := m == nil && spec.WorkDir != "" && !imageHasDir(im.rootfs, spec.WorkDir)
	if madeWorkDir {
		if err := e.copyIn(ctx, path.Clean(spec.WorkDir), emptyTar); err != nil {
			return nil, fmt.Errorf("make the working directory %s: %w", spec.WorkDir, err)
		}
	}
	if m == nil && len(spec.Files) > 0 {
		if err := e.copyFiles(ctx, spec.Files); err != nil {
			return nil, err
		}
	}
	e.pristine.Store(m == nil && len(spec.Files) == 0 && len(spec.Mounts) == 0 && !madeWorkDir)
	ok = true
	return e, nil
}

// imageHasDir reports whether the image's root filesystem holds the
// directory dir (resolved inside it).
func imageHasDir(rootfs, dir string) bool {
	root, err := os.OpenRoot(rootfs)
	if err != nil {
		return false
	}
	defer root.Close()
	st, err := root.Stat("." + path.Clean(dir))
	return err == nil && st.IsDir()
}

// emptyTar is a tar stream with no entry.
var emptyTar = make([]byte, 1024)

func cloneSpec(s polyloop.EnvSpec) polyloop.EnvSpec {
	s.Files = append([]polyloop.EnvFile(nil), s.Files...)
	s.HostEnv = append([]string(nil), s.HostEnv...)
	s.Mounts = append([]polyloop.EnvMount(nil), s.Mounts...)
	return s
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// envID names an environment's directory: the run id made safe, and a
// random suffix.
func envID(runID string) string {
	safe := unsafeChars.ReplaceAllString(runID, "_")
	if len(safe) > 40 {
		safe = safe[:40]
	}
	var b [6]byte
	rand.Read(b[:])
	return safe + "-" + hex.EncodeToString(b[:])
}

// tarFiles is a tar stream of files to copy in at the root.
func tarFiles(files []polyloop.EnvFile) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: path.Clean(f.Path)[1:], Mode: int64(f.Perm()), Size: int64(len(f.Content)), Typeflag: tar.TypeReg, ModTime: time.Unix(0, 0)}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.Content); err != nil {
			return nil, err
		}
	}
	err := tw.Close()
	return buf.Bytes(), err
}
