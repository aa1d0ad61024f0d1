// Package bench is the standard benchmark of PolyLoop: workload W, measured
// the same way every time, so that figures can be compared across versions,
// machines and other agent runtimes. `polyloop bench` prints its Report.
//
// # Workload W
//
// A run of S steps. Each step is one call to a scripted model that returns
// at once 200 characters of text (ReplyText) and one native tool call noop
// with arguments {"i": <step>, "note": <50 characters>}, and one execution
// of noop, which returns a fixed 100-character text (ToolResult). Call S+1
// answers (FinalAnswer). The tool is replay-safe; the parser is
// toolcallparser (native tool calls); no event sinks. Workload builds it;
// it is defined in package bench/workload, which imports no store, so that
// the stores' own tests and benchmarks run the same W.
//
// A run of W has S+1 steps (StepCompleted records): S action steps and the
// final one. Every "per step" figure divides by S+1.
//
// # Measurements
//
//  1. In-memory store, one run, S=Steps: time per step (wall time of
//     Runner.Run, which includes the scripted model and noop — both do no
//     work) and heap allocations per step (runtime.MemStats.Mallocs delta).
//  2. Durable store (SQLite, PostgreSQL), one run, S=Steps: time per step
//     and commits per step (the store's Stats). The run is W on a fresh
//     store (a new SQLite file, a new PostgreSQL schema) each repetition.
//     The floor under one commit is measured too — the fsync of a 4 KiB
//     overwrite on the SQLite file's file system, the round trip of an
//     autocommitted tiny INSERT on the PostgreSQL server (median of 200
//     each) — and each repetition's time per step over twice the floor's
//     median (a step is two commits).
//  3. Concurrency: C runs of S=ConcurrentSteps at once on one fresh store,
//     for each C of Concurrency: aggregate steps per second (all steps over
//     the wall time from start to the last run's end) and commits per step.
//  4. Resume: Reps runs of S=Steps are stopped before their final model call
//     (the model call S+1 cancels its run, as a process killed while
//     waiting for the model would be stopped; the log ends with that call's
//     intent). For each, a fresh process — this executable, started again
//     with ChildEnv set, see MaybeRunChild — opens the store, resumes the run
//     and reports the time from its start to the first new model call. The
//     start is the parent's wall clock just before it starts the child
//     (passed in ChildEnv), so the figure includes fork, exec, the Go
//     runtime's start and package initialization; the child also reports
//     the time from the start of main. Another fresh process times the
//     store's opening, ReadLog and PlanResume alone. On the memory store,
//     which does not outlive a process, resume is measured in process.
//  5. Peak resident memory (VmHWM, read by a child process at its end, so
//     that no other measurement counts) of one run of S=Steps on each store
//     (a `polyloop run`-style process: the child is this executable) and of
//     the largest concurrency; and bytes stored per step: the run's records
//     as the stores are handed them (their rows), as JSON lines, and the
//     SQLite file (after Close, which checkpoints the WAL) or the
//     PostgreSQL schema's tables and indexes.
//
// Each figure is the median of Reps repetitions, with min and max. The
// report names the machine (CPU, count, Go version, load average) and each
// store's settings. A figure measured at the size its goal is set for
// (S=1000; 64 runs of S=50 for throughput) carries that goal, judged
// "met" or "missed" only with at least MinRepsForVerdict repetitions.
// Memory is in MB of 10⁶ bytes, the unit of the 25 MB goal.
package bench

const workloadDescription = "workload W: S steps of one scripted reply (200 characters + one native tool call noop {i, note(50)}) " +
	"and one noop execution (100-character result), then a final answer; replay-safe tool, toolcallparser, no sinks"
