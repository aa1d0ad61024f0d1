//go:build linux

package bwrapenv

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/polyloop/polyloop"
)

// An image is a directory <Images>/<name> holding rootfs/, the root
// filesystem, and digest, its content digest (written on first use when
// absent). An image directory is immutable once used: its snapshots are
// changes to it.
type image struct {
	name, rootfs, digest string
}

// defaultEnv is what every command sees before the host variables it was
// allowed and its own.
var defaultEnv = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root"}

// resolveImage finds an image by name or by digest.
func resolveImage(images, ref string) (image, error) {
	if images == "" {
		return image{}, fmt.Errorf("%w: no image directory configured", polyloop.ErrImageNotFound)
	}
	if polyloop.IsDigest(ref) {
		entries, err := os.ReadDir(images)
		if err != nil {
			return image{}, fmt.Errorf("%w: %v", polyloop.ErrImageNotFound, err)
		}
		for _, e := range entries {
			if im, err := loadImage(images, e.Name()); err == nil && im.digest == ref {
				return im, nil
			}
		}
		return image{}, fmt.Errorf("%w: no image in %s has digest %s", polyloop.ErrImageNotFound, images, ref)
	}
	if ref == "" || strings.ContainsAny(ref, "/\x00") || ref == "." || ref == ".." {
		return image{}, fmt.Errorf("%w: image name %q", polyloop.ErrEnvInvalid, ref)
	}
	return loadImage(images, ref)
}

func loadImage(images, name string) (image, error) {
	im := image{name: name, rootfs: filepath.Join(images, name, "rootfs")}
	if st, err := os.Stat(im.rootfs); err != nil || !st.IsDir() {
		return image{}, fmt.Errorf("%w: %s has no root filesystem directory %s", polyloop.ErrImageNotFound, name, im.rootfs)
	}
	digestFile := filepath.Join(images, name, "digest")
	if raw, err := os.ReadFile(digestFile); err == nil && polyloop.IsDigest(strings.TrimSpace(string(raw))) {
		im.digest = strings.TrimSpace(string(raw))
		return im, nil
	}
	d, err := TreeDigest(im.rootfs)
	if err != nil {
		return image{}, fmt.Errorf("%w: digest of %s: %v", polyloop.ErrEnvFailed, name, err)
	}
	im.digest = d
	tmp := digestFile + ".tmp"
	if os.WriteFile(tmp, []byte(d+"\n"), 0o644) == nil {
		os.Rename(tmp, digestFile) // best effort: a read-only image is hashed each time
	}
	return im, nil
}

// TreeDigest is the content digest of a root filesystem directory: the
// SHA-256 of one line per path, sorted — its type, permission bits, owner,
// size, content digest or link target — so that two copies of a tree have
// one digest whatever their timestamps.
func TreeDigest(root string) (string, error) {
	h := sha256.New()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel := "/" + strings.TrimPrefix(strings.TrimPrefix(p, root), "/")
		st, _ := info.Sys().(*syscall.Stat_t)
		var uid, gid uint32
		if st != nil {
			uid, gid = st.Uid, st.Gid
		}
		extra := ""
		switch {
		case info.Mode().IsRegular():
			extra, err = fileDigest(p)
		case info.Mode()&fs.ModeSymlink != 0:
			extra, err = os.Readlink(p)
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%q %v %d %d %d %q\n", rel, info.Mode(), uid, gid, sizeOf(info), extra)
		return nil
	})
	if err != nil {
		return "", err
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

func sizeOf(info fs.FileInfo) int64 {
	if info.Mode().IsRegular() {
		return info.Size()
	}
	return 0
}

func fileDigest(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
