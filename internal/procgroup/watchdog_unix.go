//go:build unix

package procgroup

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// watchdogScript keeps the set of live groups this process tells it of on
// its stdin, the lifeline ("+ PGID" when a group starts, "- PGID" when it
// is over), and when the lifeline reaches end of file — this process is
// dead — sends SIGKILL to every group still in the set. It ignores the
// signals a terminal or a command's `kill 0` may send its way.
const watchdogScript = `trap '' HUP INT QUIT TERM
g=' '
while read -r op p; do
	case $op in
	+) g="$g$p " ;;
	-) case $g in *" $p "*) g="${g%% $p *} ${g#* $p }" ;; esac ;;
	esac
done
for p in $g; do kill -s KILL -- "-$p"; done 2>/dev/null`

// watchdog is this process's one watchdog and the groups it guards.
var watchdog struct {
	mu   sync.Mutex
	cmd  *exec.Cmd // nil until the first group, and after the watchdog died
	life *os.File  // the lifeline's write end: only this process holds it
	live map[int]bool
}

// WatchdogPID is the pid of this process's watchdog, 0 when none runs (for
// tests and benchmarks, which account for its CPU).
func WatchdogPID() int {
	watchdog.mu.Lock()
	defer watchdog.mu.Unlock()
	if watchdog.cmd == nil {
		return 0
	}
	return watchdog.cmd.Process.Pid
}

// tie makes the watchdog guard group pgid, starting the watchdog if none
// runs.
func tie(pgid int) error {
	watchdog.mu.Lock()
	defer watchdog.mu.Unlock()
	if watchdog.live == nil {
		watchdog.live = map[int]bool{}
	}
	watchdog.live[pgid] = true
	if watchdog.cmd != nil && tell('+', pgid) == nil {
		return nil
	}
	// No watchdog, or it died or stopped reading (the write failed): a new
	// one, told of every live group.
	if err := startWatchdog(); err != nil {
		delete(watchdog.live, pgid)
		return err
	}
	return nil
}

// untie tells the watchdog that group pgid is over: its leader is about to
// be reaped, after which its id may name another group.
func untie(pgid int) {
	watchdog.mu.Lock()
	defer watchdog.mu.Unlock()
	if !watchdog.live[pgid] {
		return
	}
	delete(watchdog.live, pgid)
	if watchdog.cmd != nil && tell('-', pgid) != nil {
		// Dead or not reading: replaced now (on failure, at the next tie,
		// or when its death is seen).
		_ = startWatchdog()
	}
}

// tellWithin bounds how long a message waits for room in the lifeline: a
// watchdog that does not read (stopped by a signal) must not stop the
// driver's actions once the pipe is full.
const tellWithin = time.Second

// tell writes one message to the lifeline: one write of a few bytes, so
// that concurrent writers (there are none: mu) could not interleave. It
// fails when the watchdog is dead or has not made room within tellWithin.
func tell(op byte, pgid int) error {
	return lifelineWrite(appendMsg(nil, op, pgid))
}

// appendMsg appends the lifeline's message "OP PGID\n" to b.
func appendMsg(b []byte, op byte, pgid int) []byte {
	return append(strconv.AppendInt(append(b, op, ' '), int64(pgid), 10), '\n')
}

// lifelineWrite writes b to the lifeline within tellWithin.
func lifelineWrite(b []byte) error {
	if err := watchdog.life.SetWriteDeadline(time.Now().Add(tellWithin)); err != nil {
		return err
	}
	_, err := watchdog.life.Write(b)
	return err
}

// startWatchdog starts a watchdog in a process group of its own and tells
// it of every live group; it replaces one that died or stopped reading
// (killed first: it must not outlive its lifeline's replacement). Called
// with mu held.
func startWatchdog() error {
	if watchdog.cmd != nil {
		_ = watchdog.cmd.Process.Kill() // its watch reaps it
		watchdog.life.Close()
		watchdog.cmd = nil
	}
	r, w, err := os.Pipe() // close-on-exec: no child but the watchdog holds an end
	if err != nil {
		return fmt.Errorf("creating the watchdog's lifeline: %w", err)
	}
	cmd := exec.Command("/bin/sh", "-c", watchdogScript)
	cmd.Dir, cmd.Env, cmd.Stdin = "/", []string{}, r
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	r.Close()
	if err != nil {
		w.Close()
		return fmt.Errorf("starting the process groups' watchdog: %w", err)
	}
	watchdog.cmd, watchdog.life = cmd, w
	go watch(cmd)
	var msgs []byte
	for pgid := range watchdog.live {
		msgs = appendMsg(msgs, '+', pgid)
	}
	if err := lifelineWrite(msgs); err != nil {
		return fmt.Errorf("telling the process groups' watchdog: %w", err)
	}
	return nil
}

// watch reaps a watchdog when it dies — it does not end while this process
// lives, unless killed from outside — and starts another if groups are
// live, so that they are tied again.
func watch(cmd *exec.Cmd) {
	_ = cmd.Wait()
	watchdog.mu.Lock()
	defer watchdog.mu.Unlock()
	if watchdog.cmd != cmd {
		return
	}
	watchdog.life.Close()
	watchdog.cmd = nil
	if len(watchdog.live) > 0 {
		_ = startWatchdog() // on failure, the next tie tries again
	}
}
