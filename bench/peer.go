package bench

// PeerResult is one measurement of one run of W, as a program that runs W
// on some runtime prints it: one JSON object on a line of its standard
// output. The peers module (bench/peers) prints them for PolyLoop, Eino
// and DBOS Transact, each run in a fresh process of its own, and polyloop
// bench --peers reads them.
type PeerResult struct {
	// Runtime names what ran W ("polyloop", "eino", "dbos") and Version
	// its module version.
	Runtime string `json:"runtime"`
	Version string `json:"version"`
	// Store is where the run was kept: "memory", "sqlite" or "postgres".
	Store string `json:"store"`
	// Steps is S: the run has S+1 steps.
	Steps int `json:"steps"`
	// WallNS is the run's wall time, from its start to its result; CPUNS
	// the user and system CPU time of the process over the same span (a
	// database server's own is not in it); Mallocs the heap allocations
	// over it (runtime.MemStats.Mallocs).
	WallNS  int64  `json:"wall_ns"`
	CPUNS   int64  `json:"cpu_ns"`
	Mallocs uint64 `json:"mallocs"`
	// StoredBytes is what the store holds after the run: the SQLite file,
	// or the PostgreSQL tables (with indexes and TOAST) of the run's
	// schema; 0 in memory.
	StoredBytes int64 `json:"stored_bytes,omitempty"`
	// PeakRSSKB is the process's peak resident set (VmHWM) in KiB, 0 when
	// unknown.
	PeakRSSKB int64 `json:"peak_rss_kb"`
}

// PeerRuntime is a runtime a peers program runs W on, and the stores it
// keeps a run in; the program prints the list as a JSON array when asked
// with -list.
type PeerRuntime struct {
	Runtime string   `json:"runtime"`
	Version string   `json:"version"`
	Stores  []string `json:"stores"`
}
