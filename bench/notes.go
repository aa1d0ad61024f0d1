package bench

// standardNotes say how to read the figures.
func standardNotes(o Options) []string {
	notes := []string{
		"per step = per StepCompleted record: a run of S action steps has S+1 steps (the last one answers)",
		"time per step is the wall time of Runner.Run over the steps; the scripted model and noop take part in it but do no work",
		"allocations per step count every goroutine's heap allocations during the run (the store's included)",
		"resume: the log ends with the intent of call S+1; resume writes a new intent (one commit) and calls the model",
		"peak RSS includes the pages of the executable that the process touched: the idle child's figure is that baseline",
		"memory figures are in MB of 10⁶ bytes (the unit of the 25 MB goal); 1 MiB = 1.048576 MB",
		"peak RSS and resume are measured in children of this executable (named above; from `polyloop bench`, the polyloop binary itself), started from a fresh copy of it in the temporary directory, so that the page cache's state of the file does not change their resident pages",
		"floor ratio: each repetition's time per step over twice the median floor (two commits a step): fsync for SQLite, an autocommitted tiny INSERT's round trip for PostgreSQL",
	}
	return append(notes, targetNotes(o)...)
}
