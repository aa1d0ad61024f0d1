// Package snapshotstore holds two polyloop.BlobStore implementations for
// environment snapshots: Memory, the reference (tests, one process), and
// Dir, a directory of content-addressed files — beside the run store on
// one machine, or on a directory every machine mounts. PostgreSQL is
// package pgsnapshots.
package snapshotstore

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/polyloop/polyloop"
)

// Memory is an in-memory BlobStore: the contract but not durability.
type Memory struct {
	mu    sync.Mutex
	blobs map[string]*memBlob
	pins  map[string]map[string]bool // holder → digests
}

type memBlob struct {
	data    []byte
	refs    []string
	touched time.Time
}

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory {
	return &Memory{blobs: map[string]*memBlob{}, pins: map[string]map[string]bool{}}
}

// Put stores blobs after checking every one: all or nothing.
func (m *Memory) Put(ctx context.Context, blobs ...polyloop.Blob) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, b := range blobs {
		if err := b.Check(); err != nil {
			return err
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	for _, b := range blobs {
		if have := m.blobs[b.Digest]; have != nil {
			have.touched = now
			continue
		}
		m.blobs[b.Digest] = &memBlob{data: clone(b.Data), refs: append([]string(nil), b.Refs...), touched: now}
	}
	return nil
}

// Get returns a copy of a blob's data.
func (m *Memory) Get(ctx context.Context, digest string) ([]byte, error) {
	b, err := m.blob(ctx, digest)
	if err != nil {
		return nil, err
	}
	return clone(b.data), nil
}

// Refs returns the digests a blob refers to.
func (m *Memory) Refs(ctx context.Context, digest string) ([]string, error) {
	b, err := m.blob(ctx, digest)
	if err != nil {
		return nil, err
	}
	return append([]string(nil), b.refs...), nil
}

func (m *Memory) blob(ctx context.Context, digest string) (*memBlob, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.blobs[digest]
	if b == nil {
		return nil, fmt.Errorf("%w: %s", polyloop.ErrBlobNotFound, digest)
	}
	return b, nil
}

// Keep returns the digests not held and touches the others.
func (m *Memory) Keep(ctx context.Context, digests []string) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var missing []string
	now := time.Now()
	for _, d := range digests {
		if b := m.blobs[d]; b != nil {
			b.touched = now
		} else {
			missing = append(missing, d)
		}
	}
	return missing, nil
}

// Pin makes digest a root of holder.
func (m *Memory) Pin(ctx context.Context, holder, digest string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.blobs[digest] == nil {
		return fmt.Errorf("%w: pin %s", polyloop.ErrBlobNotFound, digest)
	}
	if m.pins[holder] == nil {
		m.pins[holder] = map[string]bool{}
	}
	m.pins[holder][digest] = true
	return nil
}

// Holders implements polyloop.PinHolders.
func (m *Memory) Holders(ctx context.Context) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]string, 0, len(m.pins))
	for h := range m.pins {
		out = append(out, h)
	}
	return out, nil
}

// Unpin drops holder's pins.
func (m *Memory) Unpin(ctx context.Context, holder string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.pins, holder)
	return nil
}

// Sweep removes unreachable blobs untouched for grace.
func (m *Memory) Sweep(ctx context.Context, grace time.Duration) (polyloop.SweepResult, error) {
	if err := ctx.Err(); err != nil {
		return polyloop.SweepResult{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var roots []string
	for _, ds := range m.pins {
		for d := range ds {
			roots = append(roots, d)
		}
	}
	marked := Reach(roots, func(d string) []string {
		if b := m.blobs[d]; b != nil {
			return b.refs
		}
		return nil
	})
	cutoff := time.Now().Add(-grace)
	var res polyloop.SweepResult
	for d, b := range m.blobs {
		if !marked[d] && b.touched.Before(cutoff) {
			delete(m.blobs, d)
			res.Removed++
			res.RemovedBytes += int64(len(b.data))
			continue
		}
		res.Kept++
		res.KeptBytes += int64(len(b.data))
	}
	return res, nil
}

// Reach marks every digest reachable from roots through refs: the mark
// phase every store's sweep shares.
func Reach(roots []string, refs func(string) []string) map[string]bool {
	marked := map[string]bool{}
	stack := append([]string(nil), roots...)
	for len(stack) > 0 {
		d := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if marked[d] {
			continue
		}
		marked[d] = true
		stack = append(stack, refs(d)...)
	}
	return marked
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }
