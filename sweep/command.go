package sweep

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/shellexec"
)

// CommandOptions configure a command scorer.
type CommandOptions struct {
	// Args is the program and its arguments (no shell).
	Args []string
	// Dir is the working directory; relative program and file arguments
	// are found there.
	Dir string
	// Timeout bounds one scoring (default DefaultCommandTimeout).
	Timeout time.Duration
	// EnvAllow names the host variables the command gets besides the
	// shell tool's scrubbed environment (shellexec.Environ: PATH, HOME
	// = Dir, LANG): it commonly runs code a model wrote, and never sees
	// the API keys or the store's DSN of the process that runs the sweep.
	EnvAllow []string
}

// ErrScorerTimeout marks a scoring command killed at its timeout
// (CommandOptions.Timeout, a sweep file's timeout_ms).
var ErrScorerTimeout = errors.New("sweep: the scoring command ran past its timeout")

// DefaultCommandTimeout bounds one scoring by a command.
const DefaultCommandTimeout = time.Minute

// maxCommandOutput bounds what is read of a scorer command's output.
const maxCommandOutput = 1 << 20

// commandInput is what a scorer command reads on its standard input, as
// one JSON object.
type commandInput struct {
	RunID      string              `json:"run_id"`
	TaskID     string              `json:"task_id"`
	Input      string              `json:"input"`
	Target     []string            `json:"target"`
	Metadata   map[string]string   `json:"metadata,omitempty"`
	StopReason polyloop.StopReason `json:"stop_reason"`
	Answer     string              `json:"answer"`
}

type commandScorer struct {
	name, version, desc string
	opts                CommandOptions
}

// Command scores with a program: it reads the run as one JSON object on
// standard input (run_id, task_id, input, target, metadata, stop_reason,
// answer), for every finished run the sweep scores, answer or not (so that
// it can judge what the run left in its environment). Its verdict is a
// JSON object on standard output, {"score": 0.75, "explanation": "..."},
// the score from 0 to 1; or, when standard output holds no such object, its
// exit status: 0 scores 1, 1 scores 0. Any other exit, a crash or the
// timeout (ErrScorerTimeout) is a failure to score. In a sweep, at most
// Definition.MaxScorers commands run at once; the timeout counts from the
// command's start, not while it waits for its turn.
//
// Its version digests the arguments and the contents of every argument
// that names a file (relative to Dir): editing the scoring script makes
// the stored scores stale.
func Command(name string, opts CommandOptions) (Scorer, error) {
	if len(opts.Args) == 0 {
		return nil, fmt.Errorf("scorer %s: no command", name)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultCommandTimeout
	}
	files := map[string]string{}
	for _, a := range opts.Args {
		p := a
		if !filepath.IsAbs(p) {
			p = filepath.Join(opts.Dir, p)
		}
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return nil, fmt.Errorf("scorer %s: %w", name, err)
			}
			sum := sha256.Sum256(b)
			files[a] = hex.EncodeToString(sum[:])
		}
	}
	cfg := map[string]any{"args": opts.Args, "files": files, "timeout_ms": opts.Timeout.Milliseconds()}
	if len(opts.EnvAllow) > 0 {
		cfg["env_allow"] = opts.EnvAllow
	}
	return &commandScorer{name: name, version: versionOf("command", 1, cfg), opts: opts,
		desc: "the command " + strings.Join(opts.Args, " ") + " (its JSON score, or exit status 0 for correct)"}, nil
}

func (s *commandScorer) Name() string        { return s.name }
func (s *commandScorer) Version() string     { return s.version }
func (s *commandScorer) Description() string { return s.desc }

// Score implements Scorer.
func (s *commandScorer) Score(ctx context.Context, in ScoreInput) (ScoreResult, error) {
	stdin, err := json.Marshal(commandInput{RunID: in.RunID, TaskID: in.Task.ID, Input: in.Task.Input,
		Target: append([]string{}, in.Task.Target...), Metadata: in.Task.Metadata, StopReason: in.StopReason, Answer: in.Answer})
	if err != nil {
		return ScoreResult{}, err
	}
	if in.slots != nil {
		select {
		case in.slots <- struct{}{}:
			defer func() { <-in.slots }()
		case <-ctx.Done():
			return ScoreResult{}, fmt.Errorf("scorer %s: waiting for one of the %d command scorers allowed at once (max_scorers): %w",
				s.name, cap(in.slots), ctx.Err())
		}
	}
	if in.env != nil {
		return s.scoreInEnv(ctx, in, stdin)
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.opts.Args[0], s.opts.Args[1:]...)
	if !filepath.IsAbs(s.opts.Args[0]) && strings.ContainsRune(s.opts.Args[0], filepath.Separator) {
		cmd.Path = filepath.Join(s.opts.Dir, s.opts.Args[0])
	}
	cmd.Dir = s.opts.Dir
	cmd.Env = shellexec.Environ(s.opts.Dir, s.opts.EnvAllow, nil, os.LookupEnv)
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr limitedBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = time.Second
	err = cmd.Run()
	if parent.Err() != nil {
		return ScoreResult{}, fmt.Errorf("scorer %s: %w", s.name, parent.Err())
	}
	if ctx.Err() != nil {
		return ScoreResult{}, fmt.Errorf("scorer %s: %w: killed after timeout_ms %d (raise the scorer's timeout_ms, or lower max_scorers if scorers slow each other down)",
			s.name, ErrScorerTimeout, s.opts.Timeout.Milliseconds())
	}
	code := 0
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		return ScoreResult{}, fmt.Errorf("scorer %s: %w", s.name, err)
	}
	return s.verdict(code, stdout.Bytes(), stderr.String())
}

// verdict is the score a command's exit status and output give.
func (s *commandScorer) verdict(code int, stdoutBytes []byte, stderrText string) (ScoreResult, error) {
	stdout := bytes.NewBuffer(stdoutBytes)
	if r, ok := jsonVerdict(stdout.Bytes()); ok && code == 0 {
		return r, nil
	}
	why := firstLine(stdout.String())
	switch code {
	case 0:
		return ScoreResult{Value: 1, Explanation: why}, nil
	case 1:
		return ScoreResult{Value: 0, Explanation: why}, nil
	}
	return ScoreResult{}, fmt.Errorf("scorer %s: the command exited with status %d (0 means correct, 1 incorrect): %s",
		s.name, code, stderrTail(stderrText))
}

// maxStderrTail bounds what a scorer's error keeps of the command's
// standard error: its end, where a traceback says what failed.
const maxStderrTail = 2000

// stderrTail is the end of a command's standard error, at most
// maxStderrTail bytes (cut on a line, else a character, boundary, "…"
// before).
func stderrTail(s string) string {
	s = strings.TrimSpace(s)
	if len(s) <= maxStderrTail {
		return s
	}
	cut := len(s) - maxStderrTail
	if i := strings.IndexByte(s[cut:], '\n'); i >= 0 && i < maxStderrTail/2 {
		cut += i + 1
	}
	for cut < len(s) && s[cut]&0xC0 == 0x80 {
		cut++
	}
	return "…" + s[cut:]
}

// jsonVerdict reads {"score": x, "explanation": "..."} from a command's
// output.
func jsonVerdict(out []byte) (ScoreResult, bool) {
	var v struct {
		Score       *float64 `json:"score"`
		Explanation string   `json:"explanation"`
	}
	if json.Unmarshal(bytes.TrimSpace(out), &v) != nil || v.Score == nil || *v.Score < 0 || *v.Score > 1 {
		return ScoreResult{}, false
	}
	return ScoreResult{Value: *v.Score, Explanation: v.Explanation}, true
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return truncateText(s, 200)
}

// limitedBuffer keeps the first maxCommandOutput bytes written to it.
type limitedBuffer struct{ bytes.Buffer }

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := maxCommandOutput - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

var _ io.Writer = (*limitedBuffer)(nil)
