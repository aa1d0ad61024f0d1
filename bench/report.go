package bench

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is the outcome of Run. It marshals to JSON (the --json output of
// polyloop bench); WriteText prints it for people.
type Report struct {
	Machine Machine `json:"machine"`
	// Executable is the program whose children measured resume and peak
	// RSS: `polyloop bench` measures the polyloop binary itself.
	Executable Executable `json:"executable"`
	// Workload describes W and the sizes measured.
	Workload        string `json:"workload"`
	Steps           int    `json:"steps"`
	ConcurrentSteps int    `json:"concurrent_steps"`
	Concurrency     []int  `json:"concurrency"`
	Reps            int    `json:"reps"`
	// Stores describe the stores measured and their settings.
	Stores  []StoreInfo `json:"stores"`
	Figures []Figure    `json:"figures"`
	// Notes say how to read figures (what a figure includes, a measurement
	// that could not be made).
	Notes   []string      `json:"notes,omitempty"`
	Started time.Time     `json:"started"`
	Elapsed time.Duration `json:"elapsed_ns"`
}

// Executable names the measuring program and its size on disk.
type Executable struct {
	Path  string `json:"path"`
	Bytes int64  `json:"bytes"`
}

// Goals are the figures that carry a goal of the table, in the
// table's order (and the report's within a row).
func (r *Report) Goals() []Figure {
	var gs []Figure
	for _, f := range r.Figures {
		if f.Target != nil && f.Target.Goal != "" {
			gs = append(gs, f)
		}
	}
	slices.SortStableFunc(gs, func(a, b Figure) int { return goalRank(a.Target.Goal) - goalRank(b.Target.Goal) })
	return gs
}

// StoreInfo names a measured store and its settings.
type StoreInfo struct {
	Name     string `json:"name"`
	Settings string `json:"settings"`
}

// WriteText prints the report as a table: one line per figure, median with
// min and max, and the target where one applies.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	r.writeHeader(&b)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "#\tstore\tfigure\tsize\t%9s\t%9s\t%9s\tunit\ttarget\n", "median", "min", "max")
	for _, f := range r.Figures {
		target := ""
		if f.Target != nil {
			target = f.Target.String()
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%9s\t%9s\t%9s\t%s\t%s\n", f.Measure, f.Store, f.Name, size(f),
			formatValue(f.Median), formatValue(f.Min), formatValue(f.Max), f.Unit, target)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if gs := r.Goals(); len(gs) > 0 {
		b.WriteString("\ngoals (median, min – max):\n")
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "figure\tstore\tmeasured\tgoal\tverdict")
		for _, f := range gs {
			fmt.Fprintf(tw, "%s\t%s\t%s (%s – %s) %s\t%s\t%s\n", f.Target.Goal, f.Store,
				formatValue(f.Median), formatValue(f.Min), formatValue(f.Max), f.Unit, f.Target.Bound(), f.Target.VerdictText())
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func (r *Report) writeHeader(b *strings.Builder) {
	m := r.Machine
	fmt.Fprintf(b, "polyloop bench: %s\n", r.Workload)
	fmt.Fprintf(b, "sizes: S=%d single and resume runs; %s concurrent runs of S=%d; %d repetitions per figure (median, min, max)\n",
		r.Steps, joinInts(r.Concurrency), r.ConcurrentSteps, r.Reps)
	fmt.Fprintf(b, "machine: %s, %d CPUs (GOMAXPROCS %d), %s/%s, kernel %s, memory %s, %s\n",
		orUnknown(m.CPU), m.CPUs, m.GOMAXPROCS, m.OS, m.Arch, orUnknown(m.Kernel), orUnknown(m.MemTotal), m.GoVersion)
	fmt.Fprintf(b, "load average: %s at start, %s at end; started %s, took %s\n",
		orUnknown(m.LoadStart), orUnknown(m.LoadEnd), r.Started.Format(time.RFC3339), r.Elapsed.Round(time.Millisecond))
	fmt.Fprintf(b, "executable: %s (%s bytes), the children's program\n", orUnknown(r.Executable.Path), formatValue(float64(r.Executable.Bytes)))
	for _, s := range r.Stores {
		fmt.Fprintf(b, "store %s: %s\n", s.Name, s.Settings)
	}
	b.WriteString("\n")
}

func size(f Figure) string {
	if f.Steps == 0 {
		return "-"
	}
	if f.Runs > 1 || f.Measure == 3 {
		return fmt.Sprintf("C=%d S=%d", f.Runs, f.Steps)
	}
	return fmt.Sprintf("S=%d", f.Steps)
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ", ")
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
