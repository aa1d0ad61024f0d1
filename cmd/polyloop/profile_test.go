package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
)

// Each command that does the work writes the profiles its flags ask for,
// in the formats go tool pprof and go tool trace read.
func TestProfiles(t *testing.T) {
	t.Parallel()
	c := newSweepCLI(t)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"run", []string{"run", "quick.yaml", "2+2?", "--id", "p1"}},
		{"resume", []string{"resume", "p1", "--agent", "quick.yaml"}},
		{"sweep", []string{"sweep", "sweep.yaml", "--quiet"}},
		{"bench", []string{"bench", "--store", "memory", "--steps", "5", "--reps", "1", "--json"}},
	} {
		dir := filepath.Join(c.dir, tc.name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		args := append(tc.args, profileArgs(dir)...)
		if code, out, errOut := c.run(args...); code != 0 {
			t.Fatalf("polyloop %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
		}
		checkProfiles(t, tc.name, dir)
	}
	// A profile that cannot be written stops the command before it runs.
	code, _, errOut := c.run("run", "quick.yaml", "2+2?", "--id", "p2", "--cpuprofile", filepath.Join(c.dir, "none", "cpu.prof"))
	if code != exitError || !strings.Contains(errOut, "profile:") {
		t.Fatalf("a CPU profile in a missing directory: exit %d, %s", code, errOut)
	}
	if code, out, _ := c.run("show", "p2"); code != exitError {
		t.Fatalf("the run started although its profile could not be written: exit %d\n%s", code, out)
	}
}

// A worker writes its profiles when it stops.
func TestWorkerProfiles(t *testing.T) {
	dsn := fleetDatabase(t)
	dir := t.TempDir()
	w := startCLI(t, append([]string{"worker", "--queue", dsn}, profileArgs(dir)...)...)
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(w.out.String(), "taking jobs"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the worker did not start:\n%s", w.out.String())
		}
	}
	w.cmd.Process.Signal(syscall.SIGTERM)
	<-w.done
	if w.code != 0 {
		t.Fatalf("worker: exit %d\n%s", w.code, w.out.String())
	}
	checkProfiles(t, "worker", dir)
}

func profileArgs(dir string) []string {
	return []string{"--cpuprofile", filepath.Join(dir, "cpu.prof"), "--memprofile", filepath.Join(dir, "mem.prof"),
		"--trace", filepath.Join(dir, "trace.out")}
}

// checkProfiles checks the three files of profileArgs: the CPU and memory
// profiles are gzipped protocol buffers of pprof's Profile message, with
// their sample types; the trace starts with the header of Go's execution
// traces.
func checkProfiles(t *testing.T, command, dir string) {
	t.Helper()
	for file, want := range map[string][]string{
		"cpu.prof": {"samples", "count", "cpu", "nanoseconds"},
		"mem.prof": {"alloc_objects", "count", "alloc_space", "bytes", "inuse_objects", "count", "inuse_space", "bytes"},
	} {
		types, err := profileSampleTypes(filepath.Join(dir, file))
		if err != nil {
			t.Errorf("%s --%s: %v", command, strings.TrimSuffix(file, ".prof")+"profile", err)
		} else if !slices.Equal(types, want) {
			t.Errorf("%s: %s has sample types %q, want %q", command, file, types, want)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "trace.out"))
	if err != nil {
		t.Errorf("%s --trace: %v", command, err)
	} else if !traceHeader(b) {
		t.Errorf("%s --trace: %d bytes starting %q: not a Go execution trace", command, len(b), b[:min(len(b), 16)])
	}
}

// traceHeader reports whether b starts as Go's execution traces do: "go
// 1.N trace" padded with zero bytes to 16.
func traceHeader(b []byte) bool {
	if len(b) < 16 || !bytes.HasPrefix(b, []byte("go 1.")) {
		return false
	}
	head, _, ok := bytes.Cut(b[:16], []byte(" trace"))
	return ok && len(head) > len("go 1.")
}

// profileSampleTypes reads a pprof profile (a gzipped Profile message of
// profile.proto) and returns its sample types' type and unit names, in
// order. Every field of the message must decode.
func profileSampleTypes(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("not gzipped: %w", err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		return nil, err
	}
	var strs []string
	var typeIdx []int64 // (type, unit) pairs of string indexes
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		b = b[n:]
		v := b
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		b = b[n:]
		switch {
		case num == 1 && typ == protowire.BytesType: // sample_type: ValueType{type = 1, unit = 2}
			vt, _ := protowire.ConsumeBytes(v)
			pair, err := valueType(vt)
			if err != nil {
				return nil, err
			}
			typeIdx = append(typeIdx, pair[:]...)
		case num == 6 && typ == protowire.BytesType: // string_table
			s, _ := protowire.ConsumeBytes(v)
			strs = append(strs, string(s))
		}
	}
	var names []string
	for _, i := range typeIdx {
		if i < 0 || int(i) >= len(strs) {
			return nil, fmt.Errorf("sample type names string %d of %d", i, len(strs))
		}
		names = append(names, strs[i])
	}
	return names, nil
}

// valueType decodes a ValueType message: its type and unit string indexes.
func valueType(b []byte) ([2]int64, error) {
	var pair [2]int64
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return pair, protowire.ParseError(n)
		}
		b = b[n:]
		if (num == 1 || num == 2) && typ == protowire.VarintType {
			x, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return pair, protowire.ParseError(n)
			}
			pair[num-1] = int64(x)
			b = b[n:]
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return pair, protowire.ParseError(n)
		}
		b = b[n:]
	}
	return pair, nil
}
