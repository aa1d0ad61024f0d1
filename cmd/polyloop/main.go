// Command polyloop runs agents from agent files and inspects and accounts for
// their runs: every run is a durable, append-only log that can be resumed.
//
//	polyloop demo                          offline: a run killed mid-step, then resumed
//	polyloop run AGENT.yaml TASK           run an agent on a task
//	polyloop resume RUN_ID --agent AGENT.yaml
//	polyloop show RUN_ID                   the trajectory
//	polyloop ls | stats | verify | export  list, count, check and export runs
//
// Runs are stored in SQLite under ./.polyloop/ unless --store says otherwise
// (sqlite:PATH or a postgres:// DSN).
//
// Exit codes: 0 the run completed (or the command succeeded); 1 the run
// stopped for another reason (max_steps, llm_error, env_error, ...), or
// verify found a corrupt log; 2 an error (bad agent file, store failure,
// unknown run, ...); 130 interrupted (Ctrl-C): the run is unfinished, and the
// command says what resume will do with it.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/polyloop/polyloop/internal/dsn"
	"github.com/polyloop/polyloop/internal/procguard"
	"github.com/polyloop/polyloop/sweep"
)

// Exit codes.
const (
	exitOK          = 0
	exitStopped     = 1
	exitError       = 2
	exitInterrupted = 130
)

func main() {
	if err := procguard.Guard(redactArg); err != nil {
		fmt.Fprintln(os.Stderr, "polyloop: warning: the driving process's secrets are less protected than they should be:", err)
	}
	maybeRunBenchChild()
	ignoreSIGPIPE()
	os.Exit(execute(os.Args[1:], os.Stdin, &pipeWriter{w: os.Stdout}, &pipeWriter{w: os.Stderr}))
}

// redactArg masks the passwords of a command-line argument (a DSN, alone
// or as --flag=DSN) in the copy of the command line the kernel shows other
// processes.
func redactArg(a string) string {
	if strings.HasPrefix(a, "-") {
		if k, v, ok := strings.Cut(a, "="); ok {
			return k + "=" + dsn.Redact(v)
		}
	}
	return dsn.Redact(a)
}

// exitErr ends a command with a given exit code; Err, when set, is printed.
type exitErr struct {
	code int
	err  error
}

func (e *exitErr) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitErr) Unwrap() error { return e.err }

// execute runs the command line and returns the exit code.
func execute(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr, rawOut: stdout, rawErr: stderr}
	root := newRoot(a)
	root.SetArgs(args)
	err := root.Execute()
	a.closeEnvs()
	a.flushOutput()
	if err == nil {
		return exitOK
	}
	code := exitError
	var e *exitErr
	if errors.As(err, &e) {
		code = e.code
		if e.err == nil {
			return code
		}
	}
	msg := errorText(err)
	if !a.raw {
		msg = visible(msg)
	}
	fmt.Fprintln(stderr, msg)
	return code
}

// errorText is an error's message for the command line, prefixed
// "polyloop: " once: the library's messages start with it too, and a
// command's own context before one of them ("run X: polyloop: ...") would
// repeat it. Only the text changes; what the error is was decided before.
func errorText(err error) string {
	return "polyloop: " + causeText(err)
}

// causeText is an error's message inside a line of the command's own
// ("run X failed: ..."): without the "polyloop: " prefix, which only
// starts a line. A question a sweep cannot answer names the flag that
// asked it (--sort "x": expected ...).
func causeText(err error) string {
	var q *sweep.QueryError
	if errors.As(err, &q) {
		return fmt.Sprintf("--%s %q: %s", q.Field, q.Value, q.Reason)
	}
	return causeString(err.Error())
}

// causeString is causeText of an error's message.
func causeString(msg string) string {
	return strings.TrimPrefix(strings.ReplaceAll(msg, ": polyloop: ", ": "), "polyloop: ")
}
