package bench

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// Defaults of Options: the standard sizes of the issue that defines W.
const (
	DefaultSteps           = 1000
	DefaultConcurrentSteps = 50
	DefaultReps            = 5
)

// DefaultConcurrency is the default list of concurrent run counts.
var DefaultConcurrency = []int{1, 8, 64}

// DefaultStores are measured when Options.Stores is empty.
var DefaultStores = []string{"memory", "sqlite"}

// Options say what Run measures. Zero fields take the defaults.
type Options struct {
	// Stores to measure: "memory", "sqlite" (a fresh file in TempDir per
	// measurement) or a PostgreSQL DSN ("postgres://..." or
	// "postgresql://..."; each measurement uses a fresh schema, dropped
	// afterwards). Default DefaultStores.
	Stores []string
	// Steps is S of the single-run and resume measurements (default
	// DefaultSteps).
	Steps int
	// ConcurrentSteps is S of each run of the concurrency measurement
	// (default DefaultConcurrentSteps).
	ConcurrentSteps int
	// Concurrency lists the numbers of concurrent runs (default
	// DefaultConcurrency).
	Concurrency []int
	// Reps is the number of repetitions of every figure (default
	// DefaultReps); each figure is their median, with min and max.
	Reps int
	// Progress, when set, receives a line per repetition of long work.
	Progress io.Writer
	// TempDir holds the SQLite files (default os.TempDir()).
	TempDir string
}

func (o Options) withDefaults() Options {
	if len(o.Stores) == 0 {
		o.Stores = DefaultStores
	}
	if o.Steps == 0 {
		o.Steps = DefaultSteps
	}
	if o.ConcurrentSteps == 0 {
		o.ConcurrentSteps = DefaultConcurrentSteps
	}
	if len(o.Concurrency) == 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.Reps == 0 {
		o.Reps = DefaultReps
	}
	if o.TempDir == "" {
		o.TempDir = os.TempDir()
	}
	return o
}

func (o Options) validate() error {
	if o.Steps < 1 || o.ConcurrentSteps < 1 || o.Reps < 1 {
		return fmt.Errorf("bench: Steps, ConcurrentSteps and Reps must be positive (got %d, %d, %d)",
			o.Steps, o.ConcurrentSteps, o.Reps)
	}
	for _, c := range o.Concurrency {
		if c < 1 {
			return fmt.Errorf("bench: concurrency %d is not positive", c)
		}
	}
	for _, s := range o.Stores {
		if _, err := parseStore(s); err != nil {
			return err
		}
	}
	return nil
}

func (o Options) progress(format string, args ...any) {
	if o.Progress == nil {
		return
	}
	line := fmt.Sprintf(format, args...)
	if !strings.HasSuffix(line, "\n") {
		line += "\n"
	}
	io.WriteString(o.Progress, line)
}
