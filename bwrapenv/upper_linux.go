//go:build linux

package bwrapenv

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"

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
//
// The upper layer belongs to the sandbox: a process of it (one that
// outlived its action) may change any path at any moment, a file into a
// symbolic link to a host file, a directory into a link to a host
// directory. So the walk never resolves a path: it goes from directory fd
// to directory fd (each opened O_NOFOLLOW relative to its parent), takes
// each entry's metadata with fstatat(AT_SYMLINK_NOFOLLOW), reads links with
// readlinkat, and a file's content is read from an fd opened beneath upper
// with no symbolic link on the way (openUpperFile), and only if that fd is
// a regular file. A path that vanishes or changes kind between the listing
// and the read is left out (envsnap.Scanned.Open).
func scanUpper(upper string, skip []string, hostUID int) ([]envsnap.Scanned, error) {
	fd, err := unix.Open(upper, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: upper, Err: err}
	}
	var out []envsnap.Scanned
	err = scanDir(upper, fd, "", skip, hostUID, &out)
	return out, err
}

// afterList, when set (by tests), runs after a directory of the upper
// layer is listed, before its entries are looked at.
var afterList func(rel string)

// scanDir appends the entries of the directory dirfd (at rel under upper)
// and everything under them to out. It closes dirfd.
func scanDir(upper string, dirfd int, rel string, skip []string, hostUID int, out *[]envsnap.Scanned) error {
	dir := os.NewFile(uintptr(dirfd), upper+rel)
	defer dir.Close()
	names, err := dir.Readdirnames(-1)
	if err != nil {
		return err
	}
	slices.Sort(names)
	if afterList != nil {
		afterList(rel)
	}
	for _, name := range names {
		p := rel + "/" + name
		if skipped(p, skip) {
			continue
		}
		var st unix.Stat_t
		if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if err == unix.ENOENT {
				continue // gone since the listing
			}
			return &fs.PathError{Op: "stat", Path: p, Err: err}
		}
		sub := -1
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			// Opened without following a link, then described by what was
			// opened: a directory swapped for a link is not entered.
			sub, err = unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err == unix.ENOENT || err == unix.ENOTDIR || err == unix.ELOOP {
				continue // gone or no longer a directory since the listing
			}
			if err != nil {
				return &fs.PathError{Op: "open", Path: p, Err: err}
			}
			if err := unix.Fstat(sub, &st); err != nil {
				unix.Close(sub)
				return &fs.PathError{Op: "stat", Path: p, Err: err}
			}
		}
		e := envsnap.Entry{Path: p, Mode: st.Mode & 0o7777, UID: mapID(st.Uid, hostUID), GID: mapID(st.Gid, hostUID),
			MTime: st.Mtim.Nano()}
		s := envsnap.Scanned{}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFCHR:
			if st.Rdev != 0 {
				continue
			}
			e = envsnap.Entry{Path: p, Kind: envsnap.Deleted}
		case unix.S_IFDIR:
			e.Kind = envsnap.Dir
			e.Opaque = isOpaque(sub)
		case unix.S_IFLNK:
			e.Kind = envsnap.Symlink
			if e.Target, err = readlinkat(dirfd, name); err != nil {
				if err == unix.ENOENT || err == unix.EINVAL {
					continue // gone, or no longer a link, since the listing
				}
				return &fs.PathError{Op: "readlink", Path: p, Err: err}
			}
		case unix.S_IFREG:
			e.Kind = envsnap.File
			s.Stat = envsnap.Stat{Size: st.Size, MTime: st.Mtim.Nano(), CTime: st.Ctim.Nano(), Ino: st.Ino, Mode: st.Mode}
			s.Open = func() (io.ReadCloser, error) { return openUpperFile(upper, p) }
		default:
			continue // sockets, fifos: not state a snapshot keeps
		}
		s.Entry = e
		*out = append(*out, s)
		if sub >= 0 {
			if err := scanDir(upper, sub, p, skip, hostUID, out); err != nil {
				return err
			}
		}
	}
	return nil
}

func readlinkat(dirfd int, name string) (string, error) {
	for n := 256; ; n *= 2 {
		buf := make([]byte, n)
		k, err := unix.Readlinkat(dirfd, name, buf)
		if err != nil {
			return "", err
		}
		if k < n {
			return string(buf[:k]), nil
		}
	}
}

// openUpperFile opens the regular file at rel under upper for reading:
// beneath upper, through no symbolic link (no component of rel may be
// one), and only if what it opened is a regular file. A path that is gone
// or is no longer a regular file is fs.ErrNotExist: the file the scan
// listed is not there any more.
func openUpperFile(upper, rel string) (io.ReadCloser, error) {
	dfd, err := unix.Open(upper, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: upper, Err: err}
	}
	defer unix.Close(dfd)
	how := unix.OpenHow{Flags: unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_NOCTTY | unix.O_CLOEXEC,
		Resolve: beneath}
	var fd int
	for {
		fd, err = unix.Openat2(dfd, strings.TrimPrefix(rel, "/"), &how)
		if err != unix.EINTR && err != unix.EAGAIN {
			break
		}
	}
	switch err {
	case nil:
	case unix.ENOENT, unix.ENOTDIR, unix.ELOOP, unix.EXDEV:
		// gone, or a link now stands on its way
		return nil, &fs.PathError{Op: "open", Path: rel, Err: fmt.Errorf("%w (changed since the scan)", fs.ErrNotExist)}
	default:
		return nil, &fs.PathError{Op: "open", Path: rel, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "stat", Path: rel, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "open", Path: rel, Err: fmt.Errorf("%w (no longer a regular file)", fs.ErrNotExist)}
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), rel), nil
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

func isOpaque(dirfd int) bool {
	buf := make([]byte, 4)
	n, err := unix.Fgetxattr(dirfd, opaqueXattr, buf)
	return err == nil && n == 1 && buf[0] == 'y'
}

// applyUpper writes manifest m into the empty directory upper, and returns
// the stats of the files it wrote (the Writer's starting point).
//
// A manifest is data from the store, which a sandbox's paths made: it never
// writes through a symbolic link. Each entry is made relative to its
// parent directory's fd, opened beneath upper with no link on the way
// (a manifest with entries under one of its links fails), and created with
// O_EXCL / O_NOFOLLOW semantics, so that no restore writes outside upper.
func applyUpper(ctx context.Context, store polyloop.BlobStore, m envsnap.Manifest, upper string, hostUID int) (map[string]envsnap.Stat, error) {
	ufd, err := unix.Open(upper, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: upper, Err: err}
	}
	defer unix.Close(ufd)
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
		dir, base := path.Split(e.Path)
		pfd, err := parentDir(ufd, dir)
		if err != nil {
			return nil, fmt.Errorf("restore %s: %w", e.Path, err)
		}
		st, err := applyEntry(ctx, store, e, pfd, base, hostUID)
		unix.Close(pfd)
		if err != nil {
			return nil, fmt.Errorf("restore %s: %w", e.Path, err)
		}
		switch e.Kind {
		case envsnap.Dir:
			dirs = append(dirs, dirTime{e.Path, e.MTime})
		case envsnap.File:
			stats[e.Path] = envsnap.Stat{Size: st.Size, MTime: st.Mtim.Nano(), CTime: st.Ctim.Nano(), Ino: st.Ino, Mode: st.Mode}
		}
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		dir, base := path.Split(dirs[i].path)
		pfd, err := parentDir(ufd, dir)
		if err != nil {
			return nil, fmt.Errorf("restore %s: %w", dirs[i].path, err)
		}
		ts := []unix.Timespec{unix.NsecToTimespec(dirs[i].mtime), unix.NsecToTimespec(dirs[i].mtime)}
		unix.UtimesNanoAt(pfd, base, ts, unix.AT_SYMLINK_NOFOLLOW)
		unix.Close(pfd)
	}
	return stats, nil
}

// beneath resolves a path under a directory fd without following any
// symbolic link or leaving it.
var beneath = uint64(unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV)

// parentDir opens the directory dir (absolute, as in a manifest) beneath
// ufd, making what is missing of it (0755, as a restore always has).
func parentDir(ufd int, dir string) (int, error) {
	rel := strings.Trim(dir, "/")
	if rel == "" {
		return unix.Dup(ufd)
	}
	how := unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC, Resolve: beneath}
	fd, err := unix.Openat2(ufd, rel, &how)
	if err != unix.ENOENT {
		if err != nil {
			return -1, &fs.PathError{Op: "open", Path: dir, Err: err}
		}
		return fd, nil
	}
	fd, err = unix.Dup(ufd)
	if err != nil {
		return -1, err
	}
	for _, c := range strings.Split(rel, "/") {
		if err := unix.Mkdirat(fd, c, 0o755); err != nil && err != unix.EEXIST {
			unix.Close(fd)
			return -1, &fs.PathError{Op: "mkdir", Path: dir, Err: err}
		}
		next, err := unix.Openat(fd, c, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			return -1, &fs.PathError{Op: "open", Path: dir, Err: err}
		}
		fd = next
	}
	return fd, nil
}

// applyEntry makes entry e as name in the directory pfd, with its owner,
// mode and (but for a directory, whose time is set once its content is
// there) time, and returns its stat.
func applyEntry(ctx context.Context, store polyloop.BlobStore, e envsnap.Entry, pfd int, name string, hostUID int) (unix.Stat_t, error) {
	var st unix.Stat_t
	uid, gid := unmapID(e.UID, hostUID), unmapID(e.GID, hostUID)
	ts := []unix.Timespec{unix.NsecToTimespec(e.MTime), unix.NsecToTimespec(e.MTime)}
	switch e.Kind {
	case envsnap.Dir:
		if err := unix.Mkdirat(pfd, name, 0o700); err != nil {
			return st, err
		}
		fd, err := unix.Openat(pfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return st, err
		}
		defer unix.Close(fd)
		if e.Opaque {
			if err := unix.Fsetxattr(fd, opaqueXattr, []byte("y"), 0); err != nil {
				return st, err
			}
		}
		unix.Fchown(fd, uid, gid)
		return st, unix.Fchmod(fd, e.Mode&0o7777)
	case envsnap.File:
		fd, err := unix.Openat(pfd, name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err != nil {
			return st, err
		}
		f := os.NewFile(uintptr(fd), name)
		defer f.Close()
		if err := envsnap.WriteContent(ctx, store, e, f); err != nil {
			return st, err
		}
		unix.Fchown(fd, uid, gid)
		if err := unix.Fchmod(fd, e.Mode&0o7777); err != nil {
			return st, err
		}
		if err := unix.UtimesNanoAt(pfd, name, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return st, err
		}
		return st, unix.Fstat(fd, &st)
	case envsnap.Symlink:
		if err := unix.Symlinkat(e.Target, pfd, name); err != nil {
			return st, err
		}
		unix.Fchownat(pfd, name, uid, gid, unix.AT_SYMLINK_NOFOLLOW)
		return st, unix.UtimesNanoAt(pfd, name, ts, unix.AT_SYMLINK_NOFOLLOW)
	case envsnap.Deleted:
		return st, unix.Mknodat(pfd, name, unix.S_IFCHR, 0)
	}
	return st, nil
}

func unmapID(id, hostUID int) int {
	if id == 0 {
		return hostUID
	}
	return id
}
