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
	"sync"
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
	// ImagesFrom says, in an image-not-found error, where Images came from
	// and how to add an image (the CLI: the variable POLYLOOP_ENV_IMAGES).
	ImagesFrom string
	// StateDir is where environments live while they exist: one directory
	// each (the overlay's upper layer and a state file naming the run and
	// the driver). Required.
	StateDir string
	// Snapshots is where snapshots are written and read. Required.
	Snapshots polyloop.BlobStore
	// Bwrap is the bubblewrap executable ("bwrap" in PATH when empty).
	Bwrap string
	// Pool is how many started sandboxes the provider keeps ready for each
	// kind (image, limits, network policy) it has been asked for: Create of
	// a spec without From and without Mounts takes one instead of starting
	// one (see pool_linux.go for what a pooled sandbox is), and a new one
	// is started in the background. 0: no pool. The pool fills after the
	// first Create of a kind; Close drains it.
	Pool int
	// DestroyInBackground makes Destroy return once the sandbox no longer
	// serves and its processes are being killed; the rest (waiting for
	// them to end, removing the cgroup and the directory) runs in the
	// background, and Close waits for it. A driver that dies before leaves
	// the directory, labelled with its run, for Prune.
	DestroyInBackground bool
	// MaxEnvironments bounds the sandboxes that exist at once through this
	// provider — in a run's use, pooled, starting, or being destroyed in
	// the background. 0: no bound (BoundEnvironments may set one).
	MaxEnvironments int
}

// Provider creates sandboxes: bubblewrap namespaces (user, pid, mount,
// ipc, uts, cgroup, and network unless it is open) over an overlay of an
// image directory, limits through cgroups. It implements
// polyloop.EnvProvider and polyloop.EnvPruner.
type Provider struct {
	opts Options

	// The count of sandboxes and the pool (pool_linux.go).
	mu          sync.Mutex
	changed     chan struct{} // closed and replaced at every change below
	live        int           // sandboxes that exist, are starting or being removed
	bound       int           // BoundEnvironments' (0: none)
	idle        map[poolKey][]*environment
	filling     map[poolKey]int
	fillErr     error
	destroyErrs []error
	closed      bool
	wg          sync.WaitGroup // background starts and destroys
	bg          context.Context
	stopBG      context.CancelFunc
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
	if opts.Pool < 0 || opts.MaxEnvironments < 0 {
		return nil, fmt.Errorf("%w: bwrapenv: negative Pool or MaxEnvironments", polyloop.ErrInvalidConfig)
	}
	p := &Provider{opts: opts, changed: make(chan struct{}), idle: map[poolKey][]*environment{}, filling: map[poolKey]int{}}
	p.bg, p.stopBG = context.WithCancel(context.Background())
	return p, nil
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
		if errors.Is(err, polyloop.ErrImageNotFound) && p.opts.ImagesFrom != "" {
			err = fmt.Errorf("%w (%s)", err, p.opts.ImagesFrom)
		}
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
	var key *poolKey
	if p.poolable(spec) {
		key = &poolKey{rootfs: im.rootfs, digest: im.digest, limits: spec.Limits, network: spec.Network.Normalize()}
		defer p.refill(*key, im)
	}
	pooled, err := p.acquire(ctx, key)
	if err != nil {
		return nil, err
	}
	if pooled != nil {
		if err := pooled.adopt(ctx, spec, desc); err != nil {
			pooled.teardown()
			return nil, err
		}
		return pooled, nil
	}
	e := &environment{p: p, spec: cloneSpec(spec), desc: desc, image: im, hostUID: os.Getuid(), hostEnv: hostEnv(spec.HostEnv),
		writer: envsnap.NewWriter(p.opts.Snapshots, spec.RunID, desc.Image)}
	e.counted.Store(true) // acquire counted it
	e.skip = []string{"/proc", "/dev"}
	for _, mt := range spec.Mounts {
		e.skip = append(e.skip, path.Clean(mt.Target))
	}
	if err := e.start(ctx, m); err != nil {
		return nil, err
	}
	madeWorkDir, err := e.makeWorkDir(ctx, m)
	if err != nil {
		e.teardown()
		return nil, err
	}
	if m == nil && len(spec.Files) > 0 {
		if err := e.copyFiles(ctx, spec.Files); err != nil {
			e.teardown()
			return nil, err
		}
	}
	e.pristine.Store(m == nil && len(spec.Files) == 0 && len(spec.Mounts) == 0 && !madeWorkDir)
	return e, nil
}

// start makes e's directory, state file and cgroup and boots its sandbox
// (from manifest m, or the bare image); on failure it leaves nothing (and
// gives e's room back).
func (e *environment) start(ctx context.Context, m *envsnap.Manifest) (err error) {
	defer func() {
		if err != nil {
			e.teardown()
		}
	}()
	name := e.spec.RunID
	if name == "" {
		name = "pool"
	}
	e.dir = filepath.Join(e.p.opts.StateDir, envID(name))
	if err := os.Mkdir(e.dir, 0o700); err != nil {
		return err
	}
	if err := writeState(e.dir, e.state()); err != nil {
		return err
	}
	if e.spec.Limits != (polyloop.EnvLimits{}) {
		if e.cg, err = newCgroup("polyloop-"+filepath.Base(e.dir), e.spec.Limits); err != nil {
			return err
		}
	}
	return e.boot(ctx, m)
}

// makeWorkDir makes the spec's working directory when the image lacks it,
// as Docker makes one (polyloop.EnvSpec.WorkDir); an environment from a
// snapshot (m) has the snapshot's. It reports whether it made one.
func (e *environment) makeWorkDir(ctx context.Context, m *envsnap.Manifest) (bool, error) {
	dir := e.spec.WorkDir
	if m != nil || dir == "" || imageHasDir(e.image.rootfs, dir) {
		return false, nil
	}
	if err := e.copyIn(ctx, path.Clean(dir), emptyTar); err != nil {
		return false, fmt.Errorf("make the working directory %s: %w", dir, err)
	}
	return true, nil
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
