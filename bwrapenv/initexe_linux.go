//go:build linux

package bwrapenv

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// initCommand is how bwrap starts the init: the driver's own executable,
// bound read-only at /.pl/init, run directly when it is static, or through
// its program interpreter (bound with the libraries it needs under
// /.pl/lib) when it is dynamically linked — those files, read-only, are
// all of the host the init's own view holds; commands never see them (the
// init enters the environment's root before it starts any).
type initCommand struct {
	binds [][2]string // host path, path in the sandbox
	argv  []string
}

var (
	initOnce sync.Once
	initCmd  initCommand
	initErr  error
)

func resolveInit() (initCommand, error) {
	initOnce.Do(func() { initCmd, initErr = buildInitCommand() })
	return initCmd, initErr
}

func buildInitCommand() (initCommand, error) {
	exe, err := os.Executable()
	if err != nil {
		return initCommand{}, err
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		return initCommand{}, err
	}
	c := initCommand{binds: [][2]string{{exe, "/.pl/init"}}}
	interp, err := interpreter(exe)
	if err != nil {
		return initCommand{}, err
	}
	if interp == "" {
		c.argv = []string{"/.pl/init", initMarker}
		return c, nil
	}
	libs, err := sharedLibraries(interp, exe)
	if err != nil {
		return initCommand{}, err
	}
	for name, host := range libs {
		c.binds = append(c.binds, [2]string{host, "/.pl/lib/" + name})
	}
	c.binds = append(c.binds, [2]string{interp, "/.pl/ld.so"})
	c.argv = []string{"/.pl/ld.so", "--library-path", "/.pl/lib", "/.pl/init", initMarker}
	return c, nil
}

// interpreter returns the ELF program interpreter of exe, "" for a static
// executable.
func interpreter(exe string) (string, error) {
	f, err := elf.Open(exe)
	if err != nil {
		return "", fmt.Errorf("read the executable %s: %w", exe, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			raw := make([]byte, p.Filesz)
			if _, err := p.ReadAt(raw, 0); err != nil {
				return "", err
			}
			return string(bytes.TrimRight(raw, "\x00")), nil
		}
	}
	return "", nil
}

// sharedLibraries asks the interpreter which libraries exe loads (its
// --list, as ldd does) and returns them by the name exe asks for.
func sharedLibraries(interp, exe string) (map[string]string, error) {
	out, err := exec.Command(interp, "--list", exe).Output()
	if err != nil {
		return nil, fmt.Errorf("list the libraries of %s: %w", exe, err)
	}
	libs := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		name, rest, ok := strings.Cut(strings.TrimSpace(sc.Text()), " => ")
		if !ok {
			continue
		}
		host, _, _ := strings.Cut(rest, " (")
		if !filepath.IsAbs(host) {
			return nil, fmt.Errorf("library %s of %s not found", name, exe)
		}
		if host, err = filepath.EvalSymlinks(host); err != nil {
			return nil, err
		}
		libs[name] = host
	}
	return libs, sc.Err()
}
