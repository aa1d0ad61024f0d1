package sweep

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"

	"github.com/polyloop/polyloop"
)

// runEnv is a finished run's environment, as a command scorer finds it:
// the agent's spec and provider, and the last snapshot the run's log
// names (the world the run left).
type runEnv struct {
	provider polyloop.EnvProvider
	spec     polyloop.EnvSpec
	ref      polyloop.EnvSnapshot
	keep     bool
	slots    chan struct{}
}

// scorerDir is where a command scorer's files (the arguments that name
// host files) are copied inside the run's environment.
const scorerDir = "/.polyloop-scorer"

// acquireEnv takes one of the sweep's environment slots (MaxEnvironments);
// the release is returned.
func acquireEnv(ctx context.Context, slots chan struct{}) (func(), error) {
	if slots == nil {
		return func() {}, nil
	}
	select {
	case slots <- struct{}{}:
		return func() { <-slots }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("sweep: waiting for one of the %d environments allowed at once (max_environments): %w", cap(slots), ctx.Err())
	}
}

// scoreInEnv runs the scorer's command inside the run's environment,
// restored from the run's last snapshot: it sees the files the run left.
// Arguments that name host files (relative to Dir) are copied in under
// /.polyloop-scorer and named there. The environment is destroyed
// afterwards unless the sweep keeps environments.
func (s *commandScorer) scoreInEnv(ctx context.Context, in ScoreInput, stdin []byte) (ScoreResult, error) {
	re := in.env
	if re.ref == "" {
		return ScoreResult{}, fmt.Errorf("scorer %s: run %s has an environment but its log names no snapshot of it (it ran no action)", s.name, in.RunID)
	}
	release, err := acquireEnv(ctx, re.slots)
	if err != nil {
		return ScoreResult{}, fmt.Errorf("scorer %s: %w", s.name, err)
	}
	defer release()
	spec := re.spec
	spec.RunID, spec.From, spec.Files = in.RunID, re.ref, nil // the snapshot holds the files copied in
	env, err := re.provider.Create(ctx, spec)
	if err != nil {
		return ScoreResult{}, fmt.Errorf("scorer %s: the run's environment could not be restored from %s: %w", s.name, re.ref, err)
	}
	if !re.keep {
		defer env.Destroy(context.WithoutCancel(ctx))
	} else if k, ok := env.(polyloop.EnvKeeper); ok {
		// Kept until polyloop env prune is asked: the next sweep's
		// automatic prune spares it.
		if err := k.Keep(ctx); err != nil {
			return ScoreResult{}, fmt.Errorf("scorer %s: --keep-environments: the environment could not be marked kept: %w", s.name, err)
		}
	}
	argv, files, err := s.argvInEnv()
	if err != nil {
		return ScoreResult{}, err
	}
	if len(files) > 0 {
		if err := env.CopyIn(ctx, scorerDir, bytes.NewReader(files)); err != nil {
			return ScoreResult{}, fmt.Errorf("scorer %s: copying its files into the run's environment: %w", s.name, err)
		}
	}
	var vars []string
	for _, name := range s.opts.EnvAllow {
		if v, ok := os.LookupEnv(name); ok {
			vars = append(vars, name+"="+v)
		}
	}
	res, err := env.Exec(ctx, polyloop.ExecRequest{Argv: argv, Env: vars, Stdin: stdin, Timeout: s.opts.Timeout, OutputLimit: maxCommandOutput})
	if err != nil {
		return ScoreResult{}, fmt.Errorf("scorer %s: in the run's environment: %w", s.name, err)
	}
	if res.TimedOut {
		return ScoreResult{}, fmt.Errorf("scorer %s: %w: killed after timeout_ms %d", s.name, ErrScorerTimeout, s.opts.Timeout.Milliseconds())
	}
	return s.verdict(res.ExitCode, res.Stdout, string(res.Stderr))
}

// argvInEnv is the command's argv inside the environment, and a tar of
// the host files its arguments name.
func (s *commandScorer) argvInEnv() ([]string, []byte, error) {
	argv := append([]string(nil), s.opts.Args...)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	n := 0
	for i, a := range argv {
		p := a
		if !filepath.IsAbs(p) {
			p = filepath.Join(s.opts.Dir, p)
		}
		st, err := os.Stat(p)
		if err != nil || !st.Mode().IsRegular() {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, nil, fmt.Errorf("scorer %s: %w", s.name, err)
		}
		name := fmt.Sprintf("%d-%s", i, filepath.Base(p))
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: int64(st.Mode().Perm()), Size: int64(len(b)), Typeflag: tar.TypeReg}); err != nil {
			return nil, nil, err
		}
		if _, err := tw.Write(b); err != nil {
			return nil, nil, err
		}
		argv[i] = path.Join(scorerDir, name)
		n++
	}
	if err := tw.Close(); err != nil {
		return nil, nil, err
	}
	if n == 0 {
		return argv, nil, nil
	}
	return argv, buf.Bytes(), nil
}

// pruneEnvironments removes, before a sweep starts, the environments its
// agents' providers find orphaned by a killed sweep or worker (by the
// run id and driver they carry: polyloop.EnvPruner). Environments of live
// drivers are never touched, nor those a sweep kept (--keep-environments,
// polyloop.EnvKeeper): they last until polyloop env prune is asked. A
// provider that cannot prune is skipped (the next start tries again, and
// polyloop env prune does it by hand).
func (s *Sweep) pruneEnvironments(ctx context.Context) {
	seen := map[polyloop.EnvProvider]bool{}
	for _, a := range s.def.Agents {
		p := a.Environments
		if p == nil || a.Agent.Environment == nil || seen[p] {
			continue
		}
		seen[p] = true
		switch pr := p.(type) {
		case polyloop.EnvKeptSparer:
			_, _ = pr.PruneSparingKept(ctx, false)
		case polyloop.EnvPruner:
			_, _ = pr.Prune(ctx, false)
		}
	}
}
