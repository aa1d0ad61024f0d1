package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// PeerOptions say what RunPeers measures. Zero fields take the defaults
// of Options.
type PeerOptions struct {
	// Program is the peers program: built from the module bench/peers of
	// this repository (go build -o peers ./bench/peers, from that
	// directory), or any program that answers -list and -runtime R -store
	// S -steps N as it does (PeerResult).
	Program string
	// Stores: "memory", "sqlite" or a PostgreSQL DSN (default
	// DefaultStores). Each is compared with every peer that keeps runs in
	// it.
	Stores []string
	Steps  int
	Reps   int
	// Progress, when set, receives a line per measurement.
	Progress io.Writer
}

// PeerReport is the outcome of RunPeers: PolyLoop's figures beside each
// peer's, and their ratios.
type PeerReport struct {
	Machine  Machine       `json:"machine"`
	Program  string        `json:"program"`
	Runtimes []PeerRuntime `json:"runtimes"`
	Steps    int           `json:"steps"`
	Reps     int           `json:"reps"`
	// Comparisons pair PolyLoop and one peer on one store.
	Comparisons []PeerComparison `json:"comparisons"`
	Notes       []string         `json:"notes,omitempty"`
	Started     time.Time        `json:"started"`
	Elapsed     time.Duration    `json:"elapsed_ns"`
}

// PeerComparison is PolyLoop and one peer, run alternately on one kind of
// store, each run in a fresh process of the peers program.
type PeerComparison struct {
	Store    string    `json:"store"`
	PolyLoop string    `json:"polyloop_version"`
	Peer     string    `json:"peer"`
	Version  string    `json:"peer_version"`
	Rows     []PeerRow `json:"figures"`
}

// PeerRow is one figure: PolyLoop's, the peer's, and the ratio peer ÷
// PolyLoop of each pair of runs made one after the other (above 1: the
// peer takes more).
type PeerRow struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Unit     string `json:"unit"`
	PolyLoop Figure `json:"polyloop"`
	Peer     Figure `json:"peer"`
	Ratio    Figure `json:"ratio"`
}

// peerFigures are the rows of a comparison: what each measurement gives
// per step (S+1 steps a run), and the process's peak memory; durable
// figures are given for durable stores only.
var peerFigures = []struct {
	id, name, unit string
	durable        bool
	of             func(r PeerResult) float64
}{
	{"time_per_step", "wall time per step", "µs", false, func(r PeerResult) float64 { return perStep(r, float64(r.WallNS)/1e3) }},
	{"cpu_per_step", "CPU time per step (this process)", "µs", false, func(r PeerResult) float64 { return perStep(r, float64(r.CPUNS)/1e3) }},
	{"allocs_per_step", "heap allocations per step", "allocs", false, func(r PeerResult) float64 { return perStep(r, float64(r.Mallocs)) }},
	{"stored_bytes_per_step", "bytes stored per step", "bytes", true, func(r PeerResult) float64 { return perStep(r, float64(r.StoredBytes)) }},
	{"peak_rss", "peak RSS of the process", "MB", false, func(r PeerResult) float64 { return kibToMB(r.PeakRSSKB) }},
}

func perStep(r PeerResult, v float64) float64 { return v / float64(r.Steps+1) }

// RunPeers measures workload W on PolyLoop and on each peer the peers
// program offers, on each store of opts: for each repetition and store,
// one run of PolyLoop and one of each peer, alternating which goes first,
// each in a fresh process. A measurement that fails ends RunPeers with its
// error.
func RunPeers(ctx context.Context, opts PeerOptions) (*PeerReport, error) {
	o := Options{Stores: opts.Stores, Steps: opts.Steps, Reps: opts.Reps, Progress: opts.Progress}.withDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	if opts.Program == "" {
		return nil, errors.New("bench: no peers program (build it from bench/peers)")
	}
	rep := &PeerReport{Machine: currentMachine(), Program: opts.Program, Steps: o.Steps, Reps: o.Reps, Started: time.Now()}
	if err := runJSON(ctx, opts.Program, []string{"-list"}, &rep.Runtimes); err != nil {
		return nil, err
	}
	pairs, notes := peerPairs(rep.Runtimes, o.Stores)
	rep.Notes = append(notes, peerNotes...)
	results := make([][2][]PeerResult, len(pairs))
	for i := range o.Reps {
		for p, pair := range pairs {
			order := []int{0, 1}
			if i%2 == 1 {
				order = []int{1, 0}
			}
			for _, side := range order {
				r, err := runPeer(ctx, opts.Program, pair.runtimes[side], pair.store, o.Steps)
				if err != nil {
					return nil, err
				}
				o.progress("peers: %s on %s, repetition %d/%d: %s µs a step", r.Runtime, r.Store, i+1, o.Reps,
					formatValue(perStep(r, float64(r.WallNS)/1e3)))
				results[p][side] = append(results[p][side], r)
			}
		}
	}
	for p, pair := range pairs {
		rep.Comparisons = append(rep.Comparisons, compare(pair, results[p], o.Steps))
	}
	rep.Machine.LoadEnd = loadAvg()
	rep.Elapsed = time.Since(rep.Started)
	return rep, nil
}

// peerPair is PolyLoop and one peer on one store.
type peerPair struct {
	store    string // as given to the program
	kind     string
	runtimes [2]PeerRuntime // PolyLoop, the peer
}

// peerPairs pairs PolyLoop with each peer that keeps runs in each store.
func peerPairs(runtimes []PeerRuntime, stores []string) ([]peerPair, []string) {
	var polyloop *PeerRuntime
	for i, r := range runtimes {
		if r.Runtime == "polyloop" {
			polyloop = &runtimes[i]
		}
	}
	var pairs []peerPair
	var notes []string
	for _, s := range stores {
		spec, _ := parseStore(s) // validated
		found := false
		for _, r := range runtimes {
			if r.Runtime == "polyloop" || !slices.Contains(r.Stores, spec.kind) || polyloop == nil || !slices.Contains(polyloop.Stores, spec.kind) {
				continue
			}
			pairs = append(pairs, peerPair{store: s, kind: spec.kind, runtimes: [2]PeerRuntime{*polyloop, r}})
			found = true
		}
		if !found {
			notes = append(notes, fmt.Sprintf("store %s: no peer of the program keeps runs in it (or the program does not run PolyLoop there)", spec.kind))
		}
	}
	return pairs, notes
}

// compare summarizes a pair's measurements.
func compare(pair peerPair, res [2][]PeerResult, steps int) PeerComparison {
	c := PeerComparison{Store: pair.kind, PolyLoop: pair.runtimes[0].Version, Peer: pair.runtimes[1].Runtime, Version: pair.runtimes[1].Version}
	for _, f := range peerFigures {
		if f.durable && pair.kind == kindMemory {
			continue
		}
		var ours, theirs, ratios []float64
		for i := range res[0] {
			a, b := f.of(res[0][i]), f.of(res[1][i])
			ours, theirs = append(ours, a), append(theirs, b)
			if a > 0 {
				ratios = append(ratios, b/a)
			}
		}
		base := Figure{ID: f.id, Name: f.name, Store: pair.kind, Steps: steps, Runs: 1, Unit: f.unit}
		ratio := base
		ratio.Unit = "×"
		c.Rows = append(c.Rows, PeerRow{ID: f.id, Name: f.name, Unit: f.unit,
			PolyLoop: base.summarize(ours), Peer: base.summarize(theirs), Ratio: ratio.summarize(ratios)})
	}
	return c
}

// runPeer runs one measurement: runtime r on store, S steps.
func runPeer(ctx context.Context, program string, r PeerRuntime, store string, steps int) (PeerResult, error) {
	var res PeerResult
	args := []string{"-runtime", r.Runtime, "-store", store, "-steps", strconv.Itoa(steps)}
	if err := runJSON(ctx, program, args, &res); err != nil {
		return res, err
	}
	if res.Runtime != r.Runtime || res.Steps != steps || res.WallNS <= 0 {
		return res, fmt.Errorf("bench: %s %s answered %+v", program, strings.Join(args, " "), res)
	}
	return res, nil
}

// runJSON runs program with args and decodes the last line of its
// standard output into v.
func runJSON(ctx context.Context, program string, args []string, v any) error {
	cmd := exec.CommandContext(ctx, program, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("bench: %s %s: %w: %s", program, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	var last string
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" {
			last = line
		}
	}
	if err := json.Unmarshal([]byte(last), v); err != nil {
		return fmt.Errorf("bench: %s %s printed no JSON result: %w", program, strings.Join(args, " "), err)
	}
	return nil
}

// peerNotes say how to read the comparison.
var peerNotes = []string{
	"each measurement is one run of W in a fresh process of the peers program: its wall time, its CPU and allocations, from the run's start to its result (the runtime's start and the store's opening are not in them)",
	"ratio: the peer's figure over PolyLoop's, for each pair of runs made one after the other (which goes first alternates), then median, min and max; above 1 the peer takes more",
	"PolyLoop writes its log (an intent before each model call and action, a result after); Eino keeps its run in memory, with nothing to resume from after a crash; DBOS records each step's result (a model call, an action) in its system database, SQLite with synchronous=FULL as PolyLoop's store, or PostgreSQL",
	"CPU time is the measuring process's: a PostgreSQL server's own is not in it",
	"bytes stored: the SQLite file after the run, or the tables, indexes and TOAST of the run's PostgreSQL schema",
}

// WriteText prints the report for people.
func (r *PeerReport) WriteText(w io.Writer) error {
	var b strings.Builder
	m := r.Machine
	fmt.Fprintf(&b, "polyloop bench --peers: %s\n", workloadDescription)
	fmt.Fprintf(&b, "S=%d; %d repetitions, PolyLoop and each peer alternately, one fresh process of %s a run\n", r.Steps, r.Reps, r.Program)
	fmt.Fprintf(&b, "machine: %s, %d CPUs (GOMAXPROCS %d), %s/%s, kernel %s, memory %s, %s\n",
		orUnknown(m.CPU), m.CPUs, m.GOMAXPROCS, m.OS, m.Arch, orUnknown(m.Kernel), orUnknown(m.MemTotal), m.GoVersion)
	fmt.Fprintf(&b, "load average: %s at start, %s at end; started %s, took %s\n",
		orUnknown(m.LoadStart), orUnknown(m.LoadEnd), r.Started.Format(time.RFC3339), r.Elapsed.Round(time.Millisecond))
	for _, c := range r.Comparisons {
		fmt.Fprintf(&b, "\n%s: PolyLoop %s and %s %s (median, min – max)\n", c.Store, c.PolyLoop, c.Peer, c.Version)
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "figure\tunit\tPolyLoop\t%s\t%s ÷ PolyLoop\n", c.Peer, c.Peer)
		for _, row := range c.Rows {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", row.Name, row.Unit, spread(row.PolyLoop), spread(row.Peer), spread(row.Ratio))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	b.WriteString("\n")
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// spread prints a figure's median with its min and max.
func spread(f Figure) string {
	if f.N == 0 {
		return "-"
	}
	return fmt.Sprintf("%s (%s – %s)", formatValue(f.Median), formatValue(f.Min), formatValue(f.Max))
}
