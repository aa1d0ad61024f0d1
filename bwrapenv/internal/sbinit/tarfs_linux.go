//go:build linux

package sbinit

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// extractTar extracts a tar stream under dir (made if missing), inside
// the environment's root (the init has entered it, so no name reaches
// outside). Owners are set where the sandbox's user namespace maps them.
func extractTar(dir string, r io.Reader) error {
	if !path.IsAbs(dir) {
		return fmt.Errorf("copy in: %q is not an absolute path", dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tr := tar.NewReader(r)
	var dirTimes []func()
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		name := path.Join(dir, path.Clean("/"+h.Name))
		if err := extractOne(tr, h, name, dir); err != nil {
			return err
		}
		mtime := h.ModTime
		if h.Typeflag == tar.TypeDir {
			dirTimes = append(dirTimes, func() { os.Chtimes(name, mtime, mtime) })
		}
	}
	for i := len(dirTimes) - 1; i >= 0; i-- {
		dirTimes[i]()
	}
	return nil
}

func extractOne(tr *tar.Reader, h *tar.Header, name, dir string) error {
	mode := fs.FileMode(h.Mode).Perm() | modeBits(h.Mode)
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return err
	}
	switch h.Typeflag {
	case tar.TypeDir:
		if err := os.Mkdir(name, mode); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
	case tar.TypeReg:
		os.Remove(name)
		f, err := os.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
		if err != nil {
			return err
		}
		_, err = io.Copy(f, tr)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	case tar.TypeSymlink:
		os.Remove(name)
		if err := os.Symlink(h.Linkname, name); err != nil {
			return err
		}
	case tar.TypeLink:
		os.Remove(name)
		if err := os.Link(path.Join(dir, path.Clean("/"+h.Linkname)), name); err != nil {
			return err
		}
	default:
		return nil // devices, fifos: not copied
	}
	os.Lchown(name, h.Uid, h.Gid) // best effort: one uid is mapped
	if h.Typeflag != tar.TypeSymlink {
		os.Chmod(name, mode)
		os.Chtimes(name, h.ModTime, h.ModTime)
	} else {
		ts := []unix.Timespec{unix.NsecToTimespec(h.ModTime.UnixNano()), unix.NsecToTimespec(h.ModTime.UnixNano())}
		unix.UtimesNanoAt(unix.AT_FDCWD, name, ts, unix.AT_SYMLINK_NOFOLLOW)
	}
	return nil
}

func modeBits(m int64) fs.FileMode {
	var out fs.FileMode
	if m&0o4000 != 0 {
		out |= fs.ModeSetuid
	}
	if m&0o2000 != 0 {
		out |= fs.ModeSetgid
	}
	if m&0o1000 != 0 {
		out |= fs.ModeSticky
	}
	return out
}

// writeTar writes a tar stream of p: the file, or the directory and
// everything under it, named relative to p's parent (as docker cp does).
func writeTar(p string, w io.Writer) error {
	if !path.IsAbs(p) {
		return fmt.Errorf("copy out: %q is not an absolute path", p)
	}
	p = path.Clean(p)
	if _, err := os.Lstat(p); err != nil {
		return err
	}
	tw := tar.NewWriter(w)
	base := path.Dir(p)
	err := filepath.WalkDir(p, func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (name == "/proc" || name == "/sys") {
			return filepath.SkipDir // the kernel's, not the environment's
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		if info.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(name); err != nil {
				return err
			}
		}
		h, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return err
		}
		h.Name = strings.TrimPrefix(strings.TrimPrefix(name, base), "/")
		h.Uname, h.Gname = "", ""
		h.Format = tar.FormatPAX
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if info.Mode().IsRegular() {
			f, err := os.Open(name)
			if err != nil {
				return err
			}
			defer f.Close()
			// No more than the header said: a file that grew since its
			// stat is cut there.
			if _, err := io.CopyN(tw, f, h.Size); err != nil {
				return fmt.Errorf("copy out %s: %w", name, err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return tw.Close()
}
