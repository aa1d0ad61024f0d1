// Package shellexec is a polyloop.ActionExecutor that runs shell commands in
// a working directory: code actions in bash (Lang "bash", "sh", "shell" or
// empty) and a "bash" tool whose arguments are {"command": "..."}.
//
// # In the run's environment
//
// With Options.InEnvironment, nothing runs on the host: each command is
// Shell -c COMMAND (sh by default) through Environment.Exec in the run's
// environment (polyloop.EnvironmentFromContext; Agent.Environment), in
// Options.Dir inside it, its timeout enforced by the backend. What follows
// about process groups, the watchdog and the host's variables is then the
// backend's affair (docs/environments.md). The bash tool's replay policy
// defaults to polyloop.RestoreAndReplay: a resume restores the snapshot the
// action's intent names and runs it again. A command's exit, whatever it
// is, is executed; an exec the environment cannot run, and a run without
// an environment, are env_error.
//
// # State between actions
//
// Every action runs in a fresh shell: Shell -c COMMAND (bash by default), the
// way mini-swe-agent runs its commands. Nothing of the shell survives an
// action — no variables, no cd, no aliases, no background processes (see
// Process group). The working directory Options.Dir, and what the commands
// write into it, is the persistent state of the environment. A command that
// needs another directory or a variable says so itself ("cd sub && make").
//
// # Process group
//
// Each command runs in its own process group, with stdin from /dev/null and
// stdout and stderr combined into one stream; a terminal's Ctrl-C, sent to
// the driving program's group, does not reach it. When the shell exits,
// every process left in its group is killed with SIGKILL before Execute
// returns, so a background job does not outlive its action. When the
// per-action timeout passes or ctx is done, the whole group is killed the same
// way, and Execute waits for the shell before returning. (A process that
// leaves the group on purpose, with setsid, escapes this; the output stream is
// then abandoned after a short drain period.)
//
// On unix the group is also tied to the life of the process that runs
// Execute, so that a command does not go on after that process is killed
// (kill -9, a crash), beside the replay of a resumed run: the process has
// one watchdog (internal/procgroup), a /bin/sh started with its first
// command that reads a pipe whose write end only that process holds, and
// is told of each command's group as it starts and ends; when the process
// dies the kernel closes the pipe, and the watchdog kills every live group
// with SIGKILL. The shell runs nothing before the watchdog knows its group
// (it first reads a go-ahead on descriptor 3, then closes it). This holds
// whatever signal dispositions the process inherited (a SIGHUP ignored
// under nohup, tmux scripts or CI runners) and whoever adopts its orphans.
// What still escapes: a process that leaves the group (setsid). No process
// is started per action beside the shell. Shell must accept POSIX sh
// syntax (read, exec, ||) before the command.
//
// # Environment
//
// Commands see only: PATH (DefaultPath), HOME (the working directory) and
// LANG (C.UTF-8); the host variables named in Options.EnvAllow, when set on
// the host; and the explicit Options.Env values, which override everything
// else. Nothing else leaks from the host environment — API keys especially.
// The environment is computed once, by New.
//
// # Status mapping
//
//   - the command ran, whatever its exit status → Executed; a non-zero exit
//     puts "[exit code N]" on the first line of the observation, a command
//     killed by a signal "[killed by SIGKILL]" (the signal's name), and one
//     killed by its own timeout "[timed out after D]";
//   - an unknown code language, an empty command, or tool arguments that fail
//     the tool's schema → NotExecuted, with the reason as audit observation;
//   - the working directory unusable, or the shell impossible to start
//     (missing, not executable, fork failure) → EnvError;
//   - ctx done → the process group is killed and waited for, and Execute
//     returns an error for which errors.Is(err, ctx.Err()) holds.
//
// # Output
//
// The observation is the combined output, cut to Options.OutputLimit
// characters (runes; the head is kept; at most MaxOutputLimit). Dropped
// characters are counted in TruncatedChars and a last line "[output
// truncated: N characters dropped]" tells the model. The status line and the
// truncation note are not counted. Output that is not UTF-8 is kept as the
// log keeps text (polyloop.ValidText: each such byte becomes U+FFFD), so the
// model sees live what a resumed run reads back, and the observation always
// fits in a step record.
//
// # Completion
//
// When Options.DoneSentinel is set and the output contains a line equal to
// it (ignoring surrounding white space), and the command exited with status 0
// within its timeout, the outcome has Done set (the convention of research
// harnesses that end an episode with a submit command). The sentinel line is
// NOT stripped from the observation: the observation is the command's output
// verbatim, so the record shows what the command printed. The sentinel is
// detected anywhere in the output, even past the output cap.
package shellexec
