//go:build linux

package bwrapenv

import (
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/envsnap"
	"golang.org/x/sys/unix"
)

// The overlay's upper directory is the environment's changes to its image,
// in overlayfs's own form: a whiteout (a character device 0/0) for a
// deleted path, the user.overlay.opaque attribute for a directory that
// hides the image's, everything else as itself. A snapshot scans it from
// the host; a restore writes it before the overlay is mounted.

const opaqueXattr = "user.overlay.opaque"

// scanUpper lists the changes in upper, leaving out the paths under skip
// (mount points, /proc, /dev). hostUID is the host uid that the sandbox's
// root maps to.
func scanUpper(upper string, skip []string, hostUID int) ([]envsnap.Scanned, error) {
	var out []envsnap.Scanned
	err := filepath.WalkDir(upper, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == upper {
			return nil
		}
		rel := p[len(upper):]
		if skipped(rel, skip) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		e := envsnap.Entry{Path: rel, Mode: st.Mode & 0o7777, UID: mapID(st.Uid, hostUID), GID: mapID(st.Gid, hostUID),
			MTime: st.Mtim.Nano()}
		s := envsnap.Scanned{}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFCHR:
			if st.Rdev != 0 {
				return nil
			}
			e = envsnap.Entry{Path: rel, Kind: envsnap.Deleted}
		case unix.S_IFDIR:
			e.Kind = envsnap.Dir
			e.Opaque = isOpaque(p)
		case unix.S_IFLNK:
			e.Kind = envsnap.Symlink
			if e.Target, err = os.Readlink(p); err != nil {
				return err
			}
		case unix.S_IFREG:
			e.Kind = envsnap.File
			s.Stat = envsnap.Stat{Size: st.Size, MTime: st.Mtim.Nano(), CTime: st.Ctim.Nano(), Ino: st.Ino, Mode: st.Mode}
			s.Open = func() (io.ReadCloser, error) { return os.Open(p) }
		default:
			return nil // sockets, fifos: not state a snapshot keeps
		}
		s.Entry = e
		out = append(out, s)
		return nil
	})
	return out, err
}

func skipped(rel string, skip []string) bool {
	for _, s := range skip {
		if rel == s || strings.HasPrefix(rel, s+"/") {
			return true
		}
	}
	return false
}

func mapID(id uint32, hostUID int) int {
	if int(id) == hostUID {
		return 0
	}
	return int(id)
}

func isOpaque(p string) bool {
	buf := make([]byte, 4)
	n, err := unix.Lgetxattr(p, opaqueXattr, buf)
	return err == nil && n == 1 && buf[0] == 'y'
}

// applyUpper writes manifest m into the empty directory upper, and returns
// the stats of the files it wrote (the Writer's starting point).
func applyUpper(ctx context.Context, store polyloop.BlobStore, m envsnap.Manifest, upper string, hostUID int) (map[string]envsnap.Stat, error) {
	stats := map[string]envsnap.Stat{}
	type dirTime struct {
		path  string
		mtime int64
	}
	var dirs []dirTime
	for _, e := range m.Entries {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		p := upper + e.Path
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		if err := applyEntry(ctx, store, e, p); err != nil {
			return nil, err
		}
		if e.Kind == envsnap.Deleted {
			continue
		}
		uid, gid := unmapID(e.UID, hostUID), unmapID(e.GID, hostUID)
		os.Lchown(p, uid, gid)
		if e.Kind != envsnap.Symlink {
			if err := os.Chmod(p, fileMode(e.Mode)); err != nil {
				return nil, err
			}
		}
		if e.Kind == envsnap.Dir {
			dirs = append(dirs, dirTime{p, e.MTime})
			continue
		}
		ts := []unix.Timespec{unix.NsecToTimespec(e.MTime), unix.NsecToTimespec(e.MTime)}
		if err := unix.UtimesNanoAt(unix.AT_FDCWD, p, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return nil, err
		}
		if e.Kind == envsnap.File {
			var st unix.Stat_t
			if err := unix.Lstat(p, &st); err != nil {
				return nil, err
			}
			stats[e.Path] = envsnap.Stat{Size: st.Size, MTime: st.Mtim.Nano(), CTime: st.Ctim.Nano(), Ino: st.Ino, Mode: st.Mode}
		}
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		t := time.Unix(0, dirs[i].mtime)
		os.Chtimes(dirs[i].path, t, t)
	}
	return stats, nil
}

func applyEntry(ctx context.Context, store polyloop.BlobStore, e envsnap.Entry, p string) error {
	switch e.Kind {
	case envsnap.Dir:
		if err := os.Mkdir(p, 0o700); err != nil {
			return err
		}
		if e.Opaque {
			return unix.Lsetxattr(p, opaqueXattr, []byte("y"), 0)
		}
	case envsnap.File:
		f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		err = envsnap.WriteContent(ctx, store, e, f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	case envsnap.Symlink:
		return os.Symlink(e.Target, p)
	case envsnap.Deleted:
		return unix.Mknod(p, unix.S_IFCHR, 0)
	}
	return nil
}

func unmapID(id, hostUID int) int {
	if id == 0 {
		return hostUID
	}
	return id
}

func fileMode(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	if m&syscall.S_ISUID != 0 {
		mode |= fs.ModeSetuid
	}
	if m&syscall.S_ISGID != 0 {
		mode |= fs.ModeSetgid
	}
	if m&syscall.S_ISVTX != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}
