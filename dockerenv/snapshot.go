package dockerenv

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/envsnap"
)

// Snapshot copies the changed paths the Engine lists out into the
// BlobStore. A file whose size, modification time and mode are those of
// the previous snapshot is not copied again (the Engine gives no inode or
// change time: a rewrite that keeps all three is missed — a documented
// limit of this backend). Owners are not recorded (the Engine's stat gives
// none): restored files belong to root.
func (e *environment) Snapshot(ctx context.Context) (polyloop.EnvSnapshot, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.live(); err != nil {
		return "", fail("snapshot", e.spec.RunID, err)
	}
	scanned, err := e.scan(ctx)
	if err != nil {
		return "", fail("snapshot", e.spec.RunID, err)
	}
	if scanHook != nil {
		scanHook("scanned")
	}
	ref, err := e.writer.Write(ctx, scanned)
	if err != nil {
		return "", fail("snapshot", e.spec.RunID, err)
	}
	return ref, nil
}

// scanHook, when set (by tests), runs after the Engine listed the changes
// ("listed") and after the scan ("scanned"), before the files are read.
var scanHook func(stage string)

func (e *environment) skipped(p string) bool {
	for _, s := range e.skip {
		if p == s || strings.HasPrefix(p, s+"/") {
			return true
		}
	}
	return false
}

func (e *environment) scan(ctx context.Context) ([]envsnap.Scanned, error) {
	diff, err := e.p.cli.ContainerDiff(ctx, e.id, client.ContainerDiffOptions{})
	if err != nil {
		return nil, err
	}
	if scanHook != nil {
		scanHook("listed")
	}
	var out []envsnap.Scanned
	for _, ch := range diff.Changes {
		p := path.Clean(ch.Path)
		if p == "/" || e.skipped(p) {
			continue
		}
		if ch.Kind == container.ChangeDelete {
			out = append(out, envsnap.Scanned{Entry: envsnap.Entry{Path: p, Kind: envsnap.Deleted}})
			continue
		}
		st, err := e.p.cli.ContainerStatPath(ctx, e.id, client.ContainerStatPathOptions{Path: p})
		if e.gone(ctx, err) {
			continue // removed since the Engine listed it
		}
		if err != nil {
			return nil, fmt.Errorf("stat %s: %w", p, err)
		}
		s, ok := scannedOf(p, st.Stat, e.open(ctx, p))
		if ok && s.Entry.Kind == envsnap.Symlink {
			// The Engine's stat resolves the link; its archive keeps it.
			if s.Entry.Target, err = e.readlink(ctx, p); errors.Is(err, fs.ErrNotExist) {
				continue
			} else if err != nil {
				return nil, fmt.Errorf("read link %s: %w", p, err)
			}
		}
		if ok {
			out = append(out, s)
		}
	}
	return out, nil
}

func scannedOf(p string, st container.PathStat, open func() (io.ReadCloser, error)) (envsnap.Scanned, bool) {
	mode := uint32(st.Mode.Perm())
	if st.Mode&fs.ModeSetuid != 0 {
		mode |= 0o4000
	}
	if st.Mode&fs.ModeSetgid != 0 {
		mode |= 0o2000
	}
	if st.Mode&fs.ModeSticky != 0 {
		mode |= 0o1000
	}
	e := envsnap.Entry{Path: p, Mode: mode, MTime: st.Mtime.UnixNano()}
	switch {
	case st.Mode.IsDir():
		e.Kind = envsnap.Dir
	case st.Mode&fs.ModeSymlink != 0:
		e.Kind, e.Mode, e.Target = envsnap.Symlink, 0, st.LinkTarget
	case st.Mode.IsRegular():
		e.Kind = envsnap.File
		return envsnap.Scanned{Entry: e, Stat: envsnap.Stat{Size: st.Size, MTime: e.MTime, Mode: uint32(st.Mode)}, Open: open}, true
	default:
		return envsnap.Scanned{}, false
	}
	return envsnap.Scanned{Entry: e}, true
}

// gone reports whether err is the Engine's "not found" for a path of a
// container that is still there: a process of the environment removed the
// path since it was listed.
func (e *environment) gone(ctx context.Context, err error) bool {
	if !cerrdefs.IsNotFound(err) {
		return false
	}
	_, ierr := e.p.cli.ContainerInspect(ctx, e.id, client.ContainerInspectOptions{})
	return ierr == nil
}

// open reads a file of the container (the one entry of the tar stream
// the Engine sends for it, which must be a regular file). A path removed,
// or no longer a regular file, since the scan is fs.ErrNotExist
// (envsnap.Scanned).
func (e *environment) open(ctx context.Context, p string) func() (io.ReadCloser, error) {
	return func() (io.ReadCloser, error) {
		res, err := e.p.cli.CopyFromContainer(ctx, e.id, client.CopyFromContainerOptions{SourcePath: p})
		if e.gone(ctx, err) {
			return nil, fmt.Errorf("%s: %w (removed since the scan)", p, fs.ErrNotExist)
		}
		if err != nil {
			return nil, err
		}
		tr := tar.NewReader(res.Content)
		h, err := tr.Next()
		if err != nil {
			res.Content.Close()
			return nil, err
		}
		if h.Typeflag != tar.TypeReg {
			res.Content.Close()
			return nil, fmt.Errorf("%s: %w (no longer a regular file)", p, fs.ErrNotExist)
		}
		return struct {
			io.Reader
			io.Closer
		}{tr, res.Content}, nil
	}
}

// readlink is a symbolic link's target as written.
func (e *environment) readlink(ctx context.Context, p string) (string, error) {
	res, err := e.p.cli.CopyFromContainer(ctx, e.id, client.CopyFromContainerOptions{SourcePath: p})
	if e.gone(ctx, err) {
		return "", fmt.Errorf("%s: %w (removed since the scan)", p, fs.ErrNotExist)
	}
	if err != nil {
		return "", err
	}
	defer res.Content.Close()
	h, err := tar.NewReader(res.Content).Next()
	if err != nil {
		return "", err
	}
	if h.Typeflag != tar.TypeSymlink {
		return "", fmt.Errorf("%s: %w (no longer a link)", p, fs.ErrNotExist)
	}
	return h.Linkname, nil
}

// apply copies manifest m into the fresh container: what it deleted goes,
// then its directories, files and links come in as one tar stream.
func (e *environment) apply(ctx context.Context, m envsnap.Manifest) error {
	var gone []string
	for _, en := range m.Entries {
		if en.Kind == envsnap.Deleted || en.Opaque {
			gone = append(gone, en.Path)
		}
	}
	if len(gone) > 0 {
		r, err := e.exec(ctx, polyloop.ExecRequest{Argv: append([]string{"rm", "-rf", "--"}, gone...)})
		if err != nil {
			return err
		}
		if r.ExitCode != 0 {
			return fmt.Errorf("delete what the snapshot deleted: %s", r.Stderr)
		}
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	entries := append([]envsnap.Entry(nil), m.Entries...)
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].Path < entries[j].Path })
	for _, en := range entries {
		if err := writeEntry(ctx, e.p.store, tw, en); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	_, err := e.p.cli.CopyToContainer(ctx, e.id, client.CopyToContainerOptions{DestinationPath: "/", Content: &buf, CopyUIDGID: true})
	return err
}

func writeEntry(ctx context.Context, store polyloop.BlobStore, tw *tar.Writer, en envsnap.Entry) error {
	h := &tar.Header{Name: en.Path[1:], Mode: int64(en.Mode), Uid: en.UID, Gid: en.GID, ModTime: time.Unix(0, en.MTime), Format: tar.FormatPAX}
	switch en.Kind {
	case envsnap.Dir:
		h.Typeflag, h.Name = tar.TypeDir, h.Name+"/"
	case envsnap.Symlink:
		h.Typeflag, h.Linkname, h.Mode = tar.TypeSymlink, en.Target, 0o777
	case envsnap.File:
		h.Typeflag, h.Size = tar.TypeReg, en.Size
	default:
		return nil
	}
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	if en.Kind == envsnap.File {
		return envsnap.WriteContent(ctx, store, en, tw)
	}
	return nil
}
