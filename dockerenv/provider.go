// Package dockerenv is the Docker backend of the environment seam: one
// container per run, through the Docker Engine API with the official Go
// client (github.com/moby/moby/client), negotiating the API version, so
// that it also speaks to older daemons (API 1.41, Docker 20.10) and to
// Podman's Docker-compatible service.
//
// A container runs a pid 1 that lives as long as its driver's attachment
// (sh reading its standard input, which the Engine closes when the driver
// detaches, StdinOnce): when the driving process dies, its container stops
// and every command in it dies with it. The Engine cannot kill an exec, so
// a command past its timeout (or whose Exec is cancelled) is ended by
// killing the container, which is started again — the filesystem stays,
// processes are not state. Execs of one environment therefore run one after
// the other.
//
// Snapshots are never image commits (chained commits fail at a depth of
// about 125): the changed paths the Engine lists (container diff) are copied
// out into the content-addressed BlobStore (package envsnap); a restore
// creates a fresh container from the image and copies the snapshot's files
// in, deleting what the snapshot deleted.
package dockerenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/envsnap"
	"github.com/polyloop/polyloop/internal/procstart"
)

// Backend is the name of this backend in environment descriptions.
const Backend = "docker"

// Labels every environment's container carries.
const (
	LabelEnv    = "org.polyloop.env"
	LabelRunID  = "org.polyloop.run-id"
	LabelDriver = "org.polyloop.driver" // "host pid starttime"
)

// Options configure a Provider.
type Options struct {
	// Client talks to the Engine; nil: one from the environment
	// (DOCKER_HOST and the rest) with API version negotiation.
	Client *client.Client
	// Snapshots is where snapshots are written and read. Required.
	Snapshots polyloop.BlobStore
}

// Provider creates containers. It implements polyloop.EnvProvider and
// polyloop.EnvPruner.
type Provider struct {
	cli   *client.Client
	store polyloop.BlobStore
}

var _ polyloop.EnvProvider = (*Provider)(nil)

// New returns a provider; it does not contact the Engine.
func New(opts Options) (*Provider, error) {
	if opts.Snapshots == nil {
		return nil, fmt.Errorf("%w: dockerenv needs a Snapshots store", polyloop.ErrInvalidConfig)
	}
	cli := opts.Client
	if cli == nil {
		var err error
		if cli, err = client.New(client.FromEnv, client.WithAPIVersionNegotiation()); err != nil {
			return nil, fmt.Errorf("%w: docker client: %v", polyloop.ErrEnvUnsupported, err)
		}
	}
	return &Provider{cli: cli, store: opts.Snapshots}, nil
}

// fail wraps err once, at the boundary: the kind errors.Is finds (a
// sentinel of the seam, or none for a cancellation) and the Engine's own
// error.
func fail(op, runID string, err error) error {
	var oe *polyloop.EnvOpError
	if errors.As(err, &oe) {
		return err
	}
	var kind error = polyloop.ErrEnvFailed
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		kind = nil
	case errors.Is(err, polyloop.ErrEnvInvalid):
		kind = polyloop.ErrEnvInvalid
	case errors.Is(err, polyloop.ErrImageNotFound):
		kind = polyloop.ErrImageNotFound
	case errors.Is(err, polyloop.ErrEnvSnapshotNotFound):
		kind = polyloop.ErrEnvSnapshotNotFound
	case errors.Is(err, polyloop.ErrEnvLost), cerrdefs.IsNotFound(err):
		kind = polyloop.ErrEnvLost
	}
	return &polyloop.EnvOpError{Op: op, Backend: Backend, RunID: runID, Kind: kind, Err: err}
}

// image is a resolved image: its digest (the image id, the digest of its
// configuration) and its default variables.
type image struct {
	id  string
	env []string
}

func (p *Provider) resolve(ctx context.Context, ref string) (image, error) {
	res, err := p.cli.ImageInspect(ctx, ref)
	if cerrdefs.IsNotFound(err) {
		return image{}, fmt.Errorf("%w: %s: %v", polyloop.ErrImageNotFound, ref, err)
	}
	if err != nil {
		return image{}, err
	}
	im := image{id: res.ID}
	if res.Config != nil {
		im.env = res.Config.Env
	}
	if !polyloop.IsDigest(im.id) {
		return image{}, fmt.Errorf("image %s has id %q, not a sha256 digest", ref, im.id)
	}
	return im, nil
}

// Describe resolves spec's image to its id.
func (p *Provider) Describe(ctx context.Context, spec polyloop.EnvSpec) (polyloop.EnvDescription, error) {
	if err := spec.Validate(); err != nil {
		return polyloop.EnvDescription{}, fail("create", spec.RunID, fmt.Errorf("%w: %v", polyloop.ErrEnvInvalid, err))
	}
	im, err := p.resolve(ctx, spec.Image)
	if err != nil {
		return polyloop.EnvDescription{}, fail("create", spec.RunID, err)
	}
	return spec.Describe(Backend, im.id), nil
}

// Create makes a container for spec and starts it.
func (p *Provider) Create(ctx context.Context, spec polyloop.EnvSpec) (polyloop.Environment, error) {
	desc, err := p.Describe(ctx, spec)
	if err != nil {
		return nil, err
	}
	e, err := p.create(ctx, spec, desc)
	if err != nil {
		return nil, fail("create", spec.RunID, err)
	}
	return e, nil
}

func (p *Provider) create(ctx context.Context, spec polyloop.EnvSpec, desc polyloop.EnvDescription) (*environment, error) {
	im, err := p.resolve(ctx, desc.Image)
	if err != nil {
		return nil, err
	}
	var m *envsnap.Manifest
	if spec.From != "" {
		mf, err := envsnap.LoadFor(ctx, p.store, spec.From, desc.Image)
		if err != nil {
			return nil, err
		}
		// The run created from it holds it too (a fork, until the source
		// lets it go): polyloop.EnvProvider.
		if err := p.store.Pin(ctx, spec.RunID, string(spec.From)); err != nil {
			return nil, err
		}
		m = &mf
	}
	for _, mt := range spec.Mounts {
		if _, err := os.Stat(mt.Source); err != nil {
			return nil, fmt.Errorf("%w: mount source: %v", polyloop.ErrEnvInvalid, err)
		}
	}
	e := &environment{p: p, spec: spec, desc: desc, image: im, writer: envsnap.NewWriter(p.store, spec.RunID, desc.Image)}
	for _, n := range spec.HostEnv {
		if v, ok := os.LookupEnv(n); ok {
			e.hostEnv = append(e.hostEnv, n+"="+v)
		}
	}
	// /sbin/docker-init: the Engine binds its init there (HostConfig.Init),
	// an empty file in the container diff.
	e.skip = []string{"/proc", "/sys", "/dev", "/etc/hosts", "/etc/hostname", "/etc/resolv.conf", "/.dockerenv", "/sbin/docker-init"}
	for _, mt := range spec.Mounts {
		e.skip = append(e.skip, path.Clean(mt.Target))
	}
	if err := e.newContainer(ctx, m); err != nil {
		e.remove()
		return nil, err
	}
	if m == nil && len(spec.Files) > 0 {
		if err := e.copyIn(ctx, "/", filesTar(spec.Files)); err != nil {
			e.remove()
			return nil, err
		}
	}
	return e, nil
}

// driverLabel names this process: host, pid and start time.
func driverLabel() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s %d %d", host, os.Getpid(), procstart.Of(os.Getpid()))
}
