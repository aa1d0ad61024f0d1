//go:build linux

package bwrapenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/envsnap"
)

// The provider's pool and its count of sandboxes (Options.Pool,
// Options.MaxEnvironments, Options.DestroyInBackground).
//
// A pooled sandbox is started exactly as a run's sandbox created from the
// bare image with no files and no mounts is, before any run asks for it:
// the image's overlay over an empty upper layer, the init serving, the
// cgroup of its limits. Nothing runs in it and nothing is copied into it
// while it waits. Create takes one (never one that served a run: a sandbox
// leaves the pool once, to one run, and is destroyed after it), writes the
// run's id into its state file, and copies the spec's files in; the host
// variables and the working directory travel with each exec, so nothing
// of the run is in the sandbox before it is taken. A pooled sandbox is
// therefore indistinguishable from one Create starts for the run — the
// description, the files, the processes (none) — but for how long ago its
// processes started.
//
// Every sandbox that exists counts, from the moment one is decided on to
// the moment its directory is gone: pooled ones, ones starting, ones in a
// run's use, ones being destroyed in the background. With MaxEnvironments
// set, a Create that would exceed it takes a pooled sandbox of its kind,
// waits for one being started for the pool, evicts a pooled one of another
// kind, or waits for a destroy to finish; the pool fills only below it.

// poolKey is what a pooled sandbox is started from: what Create cannot
// change after the sandbox started.
type poolKey struct {
	rootfs, digest string
	limits         polyloop.EnvLimits
	network        polyloop.NetworkPolicy
}

// poolable reports whether spec's sandbox can come from the pool: created
// from the bare image (a snapshot's upper layer is laid before the sandbox
// starts) without mounts (bound when bwrap starts).
func (p *Provider) poolable(spec polyloop.EnvSpec) bool {
	return p.opts.Pool > 0 && spec.From == "" && len(spec.Mounts) == 0
}

// changedLocked wakes whoever waits for a change of the counts; p.mu held.
func (p *Provider) changedLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// acquire makes room for one sandbox. With key set, it returns a pooled
// sandbox of that kind when there is one (the room is the pooled one's);
// otherwise it counts a new sandbox and returns nil: the caller starts one
// and its teardown gives the room back.
func (p *Provider) acquire(ctx context.Context, key *poolKey) (*environment, error) {
	for {
		p.mu.Lock()
		if key != nil {
			if e := p.popIdleLocked(*key); e != nil {
				p.mu.Unlock()
				return e, nil
			}
		}
		max := p.max()
		if max == 0 || p.live < max {
			p.live++
			p.changedLocked()
			p.mu.Unlock()
			return nil, nil
		}
		if key == nil || p.filling[*key] == 0 {
			// No sandbox of this kind is on its way: make room by evicting
			// a pooled one of another kind (its destroy gives the room).
			for k := range p.idle {
				if e := p.popIdleLocked(k); e != nil {
					p.destroyLocked(e)
					break
				}
			}
		}
		wait := p.changed
		p.mu.Unlock()
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for one of the %d sandboxes allowed at once: %w", max, ctx.Err())
		}
	}
}

// popIdleLocked takes a pooled sandbox of kind key that still runs; one
// that stopped (killed while it waited) is destroyed. p.mu held.
func (p *Provider) popIdleLocked(key poolKey) *environment {
	for len(p.idle[key]) > 0 {
		q := p.idle[key]
		e := q[0]
		p.idle[key] = q[1:]
		if len(p.idle[key]) == 0 {
			delete(p.idle, key)
		}
		select {
		case <-e.sb.done:
			p.destroyLocked(e)
			continue
		default:
		}
		return e
	}
	return nil
}

func (p *Provider) max() int {
	if p.bound > 0 && (p.opts.MaxEnvironments == 0 || p.bound < p.opts.MaxEnvironments) {
		return p.bound
	}
	return p.opts.MaxEnvironments
}

// release gives back the room of a sandbox whose removal finished.
func (p *Provider) release() {
	p.mu.Lock()
	p.live--
	p.changedLocked()
	p.mu.Unlock()
}

// BoundEnvironments lowers the number of sandboxes that may exist at once
// through this provider to n (polyloop.EnvBounder): a sweep's
// max_environments, so that the pooled sandboxes and the ones still being
// destroyed count against it. The lowest bound asked (or
// Options.MaxEnvironments) holds for the provider's life.
func (p *Provider) BoundEnvironments(n int) {
	if n <= 0 {
		return
	}
	p.mu.Lock()
	if p.bound == 0 || n < p.bound {
		p.bound = n
	}
	p.changedLocked()
	p.mu.Unlock()
}

// refill starts sandboxes of kind key in the background until the pool
// holds Options.Pool of them (counting those starting), within the bound.
func (p *Provider) refill(key poolKey, im image) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for !p.closed && len(p.idle[key])+p.filling[key] < p.opts.Pool {
		if max := p.max(); max > 0 && p.live >= max {
			return
		}
		p.live++
		p.filling[key]++
		p.wg.Add(1)
		go p.fillOne(key, im)
	}
}

// fillTimeout bounds the start of a pooled sandbox: one that does not
// serve by then is torn down (LastFillError says why), not kept counted.
const fillTimeout = time.Minute

func (p *Provider) fillOne(key poolKey, im image) {
	defer p.wg.Done()
	e := &environment{p: p, image: im, hostUID: os.Getuid(), skip: []string{"/proc", "/dev"},
		spec: polyloop.EnvSpec{Image: key.digest, Limits: key.limits, Network: key.network}}
	e.counted.Store(true)
	ctx, cancel := context.WithTimeout(p.bg, fillTimeout)
	err := e.start(ctx, nil)
	cancel()
	p.mu.Lock()
	p.filling[key]--
	if err == nil && p.closed {
		err = errors.New("the provider closed")
	}
	if err != nil {
		p.fillErr = err
		p.changedLocked()
		p.mu.Unlock()
		e.teardown()
		return
	}
	p.fillErr = nil
	p.idle[key] = append(p.idle[key], e)
	p.changedLocked()
	p.mu.Unlock()
}

// adopt makes a pooled sandbox the environment of spec's run: the run's
// id in its state file (its label, for Prune), its snapshots' writer, the
// spec's files copied in.
func (e *environment) adopt(ctx context.Context, spec polyloop.EnvSpec, desc polyloop.EnvDescription) error {
	e.spec, e.desc = cloneSpec(spec), desc
	e.hostEnv = hostEnv(spec.HostEnv)
	e.writer = envsnap.NewWriter(e.p.opts.Snapshots, spec.RunID, desc.Image)
	e.writer.Primed(envsnap.Manifest{}, nil)
	if err := writeState(e.dir, e.state()); err != nil {
		return err
	}
	madeWorkDir, err := e.makeWorkDir(ctx, nil)
	if err != nil {
		return err
	}
	if len(spec.Files) > 0 {
		if err := e.copyFiles(ctx, spec.Files); err != nil {
			return err
		}
	}
	e.pristine.Store(len(spec.Files) == 0 && !madeWorkDir)
	return nil
}

// destroyLocked destroys e in the background (a pooled sandbox evicted or
// found stopped, or a run's with DestroyInBackground); synchronously once
// the provider is closed. p.mu held.
func (p *Provider) destroyLocked(e *environment) {
	if p.closed {
		go e.teardown() // Close waits for nothing more: it is under way
		return
	}
	e.shutdown()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		if err := e.teardown(); err != nil {
			p.mu.Lock()
			p.destroyErrs = append(p.destroyErrs, fmt.Errorf("destroy %s: %w", filepath.Base(e.dir), err))
			p.mu.Unlock()
		}
	}()
}

// Close stops filling the pool, destroys the pooled sandboxes, and waits
// until every destroy running in the background has finished. It returns
// the errors of those destroys (their sandboxes' directories are then left
// for Prune). The provider stays usable, without a pool, its destroys
// synchronous again. Without a pool and background destroys, it does
// nothing.
func (p *Provider) Close() error {
	p.mu.Lock()
	p.closed = true
	p.stopBG()
	var pooled []*environment
	for k, q := range p.idle {
		pooled = append(pooled, q...)
		delete(p.idle, k)
	}
	p.changedLocked()
	p.mu.Unlock()
	var errs []error
	for _, e := range pooled {
		if err := e.teardown(); err != nil {
			errs = append(errs, fmt.Errorf("destroy %s: %w", filepath.Base(e.dir), err))
		}
	}
	p.wg.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	err := errors.Join(append(errs, p.destroyErrs...)...)
	p.destroyErrs = nil
	return err
}

// PoolStats is what the provider's pool holds now (tests and benchmarks).
type PoolStats struct {
	Idle, Starting, Live int
	// LastFillError is the last failure to start a pooled sandbox, cleared
	// by a success.
	LastFillError error
}

// Stats reports the pool's counts.
func (p *Provider) Stats() PoolStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := PoolStats{Live: p.live, LastFillError: p.fillErr}
	for _, q := range p.idle {
		st.Idle += len(q)
	}
	for _, n := range p.filling {
		st.Starting += n
	}
	return st
}
