package main

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/envsnap"
	"github.com/polyloop/polyloop/snapshotstore"
	"github.com/spf13/cobra"
)

func newEnvExportCmd(a *app) *cobra.Command {
	var (
		step int
		from string
	)
	cmd := &cobra.Command{
		Use:   "export RUN DIR|-",
		Short: "Write the files a run's environment held, at the end or at a step, to DIR (or a tar on standard output)",
		Long: `Restore the run's environment from the snapshot its log names — the last one, or
with --step N the one at the end of step N, --step 0 the environment as it was created, before
the first action — and copy a directory of it (--path, default the
environment's working directory) into DIR, or as a tar stream to standard
output with DIR "-" (there --path may also name a file). The environment is
made for the export and destroyed after it; the run and its snapshots are not
changed.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("step") {
				step = lastStep
			}
			return a.envExport(cmd.Context(), args[0], step, from, args[1])
		},
	}
	cmd.Flags().IntVar(&step, "step", 0, "the environment at the end of this step, 0: before the first action (default: the last snapshot)")
	cmd.Flags().StringVar(&from, "path", "", "the directory inside to export (default: the environment's working directory, else /); with DIR -, a file too")
	return cmd
}

// errNoEnvironment: the run ran without an environment.
var errNoEnvironment = errors.New("has no environment")

// lastStep, as --step, is the last snapshot the run's log names (the flag
// left out).
const lastStep = -1

// errExportNotDir: --path names a file, exported into a directory.
var errExportNotDir = errors.New("is not a directory")

// runEnvironment reads a run's log and finds its environment's description
// and the snapshot at step: the end of that step, 0 the environment before
// the first action, lastStep the last.
func (a *app) runEnvironment(ctx context.Context, runID string, step int) (polyloop.EnvDescription, polyloop.EnvSnapshot, error) {
	st, err := openStore(ctx, a.store, readOnlyStore)
	if err != nil {
		return polyloop.EnvDescription{}, "", err
	}
	defer st.Close()
	log, err := readRun(ctx, st, runID)
	if err != nil {
		return polyloop.EnvDescription{}, "", err
	}
	snap, _ := log.Snapshot()
	if snap.Environment == nil {
		return polyloop.EnvDescription{}, "", fmt.Errorf("run %s %w", runID, errNoEnvironment)
	}
	ref := polyloop.LastEnvSnapshot(log)
	switch {
	case step < lastStep:
		return *snap.Environment, "", fmt.Errorf("--step %d: give a step of the run, 0 for its environment before the first action, or leave --step out for its last snapshot", step)
	case step == 0:
		ref = firstEnvSnapshot(log)
	case step > 0:
		if n := polyloop.ComputeTotals(log).Steps; step > n {
			return *snap.Environment, "", fmt.Errorf("--step %d: run %s has %d steps (give 1 to %d, or leave --step out for its last snapshot)", step, runID, n, n)
		}
		ref = polyloop.EnvSnapshotAt(log, step)
	}
	if ref == "" {
		return *snap.Environment, "", fmt.Errorf("the log of run %s names no snapshot of its environment by then", runID)
	}
	return *snap.Environment, ref, nil
}

func (a *app) envExport(ctx context.Context, runID string, step int, from, dir string) error {
	if ctx == nil {
		ctx = context.Background()
	}
	desc, ref, err := a.runEnvironment(ctx, runID, step)
	if err != nil {
		return err
	}
	p, err := a.envProvider(desc.Backend)
	if err != nil {
		return err
	}
	e, err := p.Create(ctx, polyloop.EnvSpec{RunID: runID + "-export", Image: desc.Image, From: ref})
	if err != nil {
		return err
	}
	defer e.Destroy(context.WithoutCancel(ctx))
	if from == "" {
		from = desc.WorkDir
	}
	if from == "" {
		from = "/"
	}
	if dir == "-" {
		return e.CopyOut(ctx, from, a.rawOut) // binary: never through the escaping writer
	}
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	strip := "" // the stream names the directory's own entry first ("work/f1" for /work)
	if from != "/" {
		strip = path.Base(path.Clean(from))
	}
	go func() {
		err := untar(pr, dir, strip)
		pr.CloseWithError(err) // a stream untar gave up on ends CopyOut's writes
		done <- err
	}()
	err = e.CopyOut(ctx, from, pw)
	pw.CloseWithError(err)
	if uerr := <-done; uerr != nil {
		err = uerr
	}
	if errors.Is(err, errExportNotDir) {
		return fmt.Errorf("--path %s %w in the environment of run %s: export writes a directory's files into DIR (give the directory, or DIR - for a tar stream of the file)", from, err, runID)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stderr, "exported %s of run %s (snapshot %s) to %s\n", from, runID, ref.Short(), dir)
	return nil
}

// untar extracts a tar stream under dir, with the leading component
// strip (when set) taken off every name. Every write goes through an
// os.Root of dir: a name that leaves it, or a path through a symlink the
// archive made (x -> /etc, then x/passwd), is refused, since the archive
// is what an agent left in its environment.
func untar(r io.Reader, dir, strip string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			_, _ = io.Copy(io.Discard, r)
			return nil
		}
		if err != nil {
			return err
		}
		name := path.Clean("/" + h.Name)
		if strip != "" {
			if name == "/"+strip && h.Typeflag != tar.TypeDir {
				return errExportNotDir
			}
			if name == "/"+strip {
				name = "/"
			} else {
				name = "/" + strings.TrimPrefix(strings.TrimPrefix(name, "/"+strip+"/"), "/")
			}
		}
		if name == "/" {
			continue
		}
		if err := untarEntry(root, strings.TrimPrefix(name, "/"), h, tr); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
}

// untarEntry writes one entry of a tar stream at name inside root.
func untarEntry(root *os.Root, name string, h *tar.Header, r io.Reader) error {
	switch h.Typeflag {
	case tar.TypeDir:
		return root.MkdirAll(name, 0o755)
	case tar.TypeReg:
		if err := root.MkdirAll(path.Dir(name), 0o755); err != nil {
			return err
		}
		f, err := root.OpenFile(name, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode).Perm()|0o200)
		if err != nil {
			return err
		}
		_, err = io.Copy(f, r)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	case tar.TypeSymlink:
		if err := root.MkdirAll(path.Dir(name), 0o755); err != nil {
			return err
		}
		_ = root.Remove(name)
		return root.Symlink(h.Linkname, name)
	}
	return nil
}

// envFileDiff lists the paths whose state differs between two runs'
// environments (the snapshots at step, or the last ones), by
// envsnap.DiffRefs. When either run has no environment it compares
// nothing and says so in missing (every file would otherwise read as the
// other run's alone).
func (a *app) envFileDiff(ctx context.Context, ida, idb string, step int) (changes []envsnap.Change, missing string, err error) {
	var refs [2]polyloop.EnvSnapshot
	var without []string
	for i, id := range []string{ida, idb} {
		_, ref, err := a.runEnvironment(ctx, id, step)
		if err != nil && ref == "" && errors.Is(err, errNoEnvironment) {
			without = append(without, id)
			continue
		}
		if err != nil {
			return nil, "", err
		}
		refs[i] = ref
	}
	switch len(without) {
	case 2:
		return nil, "neither run has an environment: no files to compare", nil
	case 1:
		return nil, fmt.Sprintf("run %s has no environment: no files to compare", without[0]), nil
	}
	store, err := snapshotstore.OpenDir(envSnapshotDir(a.store))
	if err != nil {
		return nil, "", err
	}
	changes, err = envsnap.DiffRefs(ctx, store, refs[0], refs[1])
	return changes, "", err
}

// firstEnvSnapshot is the snapshot the run's first action intent names:
// its environment as it was created (the image and the files copied in),
// before any action. Empty when the run ran no action.
func firstEnvSnapshot(log polyloop.RunLog) polyloop.EnvSnapshot {
	for _, r := range log.Records {
		if b, ok := r.Body.(*polyloop.ActionIntent); ok && b.EnvSnapshot != "" {
			return b.EnvSnapshot
		}
	}
	return ""
}
