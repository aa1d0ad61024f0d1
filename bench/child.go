package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// ChildEnv is the environment variable that makes a process a measurement
// child: its value is the task, as JSON. MaybeRunChild reads it.
const ChildEnv = "POLYLOOP_BENCH_CHILD"

// The child modes.
const (
	modeResume        = "resume"         // resume a stopped run; time to the first new model call
	modePlan          = "plan"           // open, read the log and plan it; time each
	modeRSSSingle     = "rss-single"     // one run of W; peak RSS
	modeRSSConcurrent = "rss-concurrent" // concurrent runs of W; peak RSS
	modeIdle          = "idle"           // nothing: the process's own peak RSS
	modeSweep         = "sweep"          // the sweep benchmark (sweepbench.go); wall time and peak RSS
	modeSweepBaseline = "sweep-baseline" // the sweep's runs without the sweep; wall time
)

// childTask is what the parent asks of a child.
type childTask struct {
	Mode  string   `json:"mode"`
	Store storeLoc `json:"store"`
	RunID string   `json:"run_id,omitempty"`
	Steps int      `json:"steps,omitempty"`
	Runs  int      `json:"runs,omitempty"`
	// Concurrency and LatencyNS, for the sweep benchmark.
	Concurrency int   `json:"concurrency,omitempty"`
	LatencyNS   int64 `json:"latency_ns,omitempty"`
	// ExecUnixNano is the parent's wall clock just before it started the
	// child: the child's "process start".
	ExecUnixNano int64 `json:"exec_unix_nano"`
}

// childResult is what a child prints, as one JSON line on stdout.
type childResult struct {
	// StartToCall runs from the parent's ExecUnixNano to the first model
	// call; EntryToCall from MaybeRunChild's entry (the start of main) to it.
	StartToCall time.Duration `json:"start_to_call_ns,omitempty"`
	EntryToCall time.Duration `json:"entry_to_call_ns,omitempty"`
	// Open, Read and Plan time the store's opening, ReadLog and PlanResume.
	Open    time.Duration `json:"open_ns,omitempty"`
	Read    time.Duration `json:"read_ns,omitempty"`
	Plan    time.Duration `json:"plan_ns,omitempty"`
	Records int           `json:"records,omitempty"`
	Steps   int           `json:"steps,omitempty"`
	// WallNS and Commits, for the sweep benchmark.
	WallNS  int64 `json:"wall_ns,omitempty"`
	Commits int64 `json:"commits,omitempty"`
	// CPUNS is the CPU (user and system) the sweep took in the child, from
	// its start to its end; FileBytes the SQLite file's size once the
	// store is closed (the write-ahead log folded in).
	CPUNS     int64 `json:"cpu_ns,omitempty"`
	FileBytes int64 `json:"file_bytes,omitempty"`
	// PeakRSSKB is VmHWM of /proc/self/status at the end, in KiB (0 when
	// unknown). AnonKB and FileKB split the resident set at the end into
	// anonymous memory (heap, stacks) and pages of files (the executable).
	PeakRSSKB int64 `json:"peak_rss_kb"`
	AnonKB    int64 `json:"rss_anon_kb,omitempty"`
	FileKB    int64 `json:"rss_file_kb,omitempty"`
}

// MaybeRunChild makes a benchmark binary serve as its own measurement child.
// Call it first thing in main (or TestMain): when the process was started by
// Run as a child (ChildEnv is set), it does the child's work, prints its
// result on stdout and exits — with status 0, or 1 after printing an error on
// stderr; otherwise it returns at once and does nothing.
//
// The resume measurement needs a fresh process: the child opens the store,
// resumes a stopped run and reports the time from its start to the first
// new model call. Peak memory is measured in children too, so that one
// measurement's memory does not count in another's.
func MaybeRunChild() {
	entry := time.Now()
	spec, ok := os.LookupEnv(ChildEnv)
	if !ok {
		return
	}
	res, err := runChild(context.Background(), spec, entry)
	if err == nil {
		err = json.NewEncoder(os.Stdout).Encode(res)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "polyloop bench child: %v\n", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func runChild(ctx context.Context, spec string, entry time.Time) (childResult, error) {
	var t childTask
	if err := json.Unmarshal([]byte(spec), &t); err != nil {
		return childResult{}, fmt.Errorf("reading %s: %w", ChildEnv, err)
	}
	var res childResult
	var err error
	switch t.Mode {
	case modeResume:
		res, err = childResume(ctx, t, entry)
	case modePlan:
		res, err = childPlan(ctx, t)
	case modeRSSSingle:
		res, err = childRuns(ctx, t, 1)
	case modeRSSConcurrent:
		res, err = childRuns(ctx, t, t.Runs)
	case modeSweep:
		res, err = childSweep(ctx, t)
	case modeSweepBaseline:
		res, err = childSweepBaseline(ctx, t)
	case modeIdle:
	default:
		err = fmt.Errorf("unknown mode %q", t.Mode)
	}
	res.PeakRSSKB = statusKB("VmHWM")
	res.AnonKB, res.FileKB = statusKB("RssAnon"), statusKB("RssFile")
	return res, err
}

// childRuns runs n concurrent runs of W on the task's store.
func childRuns(ctx context.Context, t childTask, n int) (res childResult, err error) {
	st, err := t.Store.open(ctx)
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, st.close()) }()
	_, res.Steps, err = runConcurrently(ctx, st.Store, Workload{Steps: t.Steps}, n)
	return res, err
}

// statusKB reads a field of /proc/self/status in KiB, 0 when unknown.
// VmHWM is the peak resident set of this process since it was exec'd. (The
// parent's rusage of a child is no substitute on Linux: Go starts children
// with vfork, and exec folds the parent's high-water mark into the child's
// ru_maxrss.)
func statusKB(field string) int64 {
	v := procField("/proc/self/status", field)
	n, err := strconv.ParseInt(strings.TrimSuffix(v, " kB"), 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// startChild runs this executable (or the copy of it that ctx names, see
// withChildExe) as a child doing t and returns its result.
func startChild(ctx context.Context, t childTask) (childResult, error) {
	exe, err := childExe(ctx)
	if err != nil {
		return childResult{}, err
	}
	cmd := exec.CommandContext(ctx, exe)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	t.ExecUnixNano = time.Now().UnixNano()
	spec, err := json.Marshal(t)
	if err != nil {
		return childResult{}, err
	}
	cmd.Env = append(os.Environ(), ChildEnv+"="+string(spec))
	if err := cmd.Run(); err != nil {
		return childResult{}, fmt.Errorf("bench: child %s: %w: %s", t.Mode, err, strings.TrimSpace(stderr.String()))
	}
	return parseChildResult(stdout.Bytes(), t.Mode)
}

// parseChildResult reads the last line of a child's stdout. A binary that
// does not call MaybeRunChild first prints something else (or nothing).
func parseChildResult(out []byte, mode string) (childResult, error) {
	var last string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" {
			last = line
		}
	}
	var res childResult
	if err := json.Unmarshal([]byte(last), &res); err != nil {
		return res, fmt.Errorf("bench: child %s printed no result (does main call bench.MaybeRunChild first?): %w", mode, err)
	}
	return res, nil
}
