// Package procgroup runs a command in a process group of its own, tied to
// the life of the process that started it, and ends the group as a whole:
// what the executors start (shell commands, stdio MCP servers) is out of the
// reach of a terminal's signals to polyloop's group (Ctrl-C sends SIGINT to
// the whole foreground group), nothing a command leaves in its group
// outlives it, and nothing of the group outlives polyloop when it is killed.
//
// The tie (design records 0038 and 0051): the process has one watchdog, a
// /bin/sh started at its first command, in a group of its own, whose stdin
// is the read end of a pipe (the lifeline) whose write end only this
// process holds (close-on-exec). The process tells it of each group when
// the group starts and when it is over; when the process dies, however it
// dies, the kernel closes the lifeline, and the watchdog, reading end of
// file, sends SIGKILL to every group it still knows. This depends neither
// on inherited signal dispositions (a SIGHUP ignored under nohup) nor on who
// adopts the orphans. A command is started waiting for a go-ahead on
// descriptor 3, given only once the watchdog knows its group: if the
// process dies between the fork and that moment, the command reads end of
// file and exits without running anything. A group is forgotten only after
// it has been killed and before its leader is reaped, so the watchdog never
// kills a group id reused by someone else while this process lives. A
// watchdog killed from outside is replaced, and told of the live groups,
// as soon as its death is seen.
//
// What escapes: a process that leaves its group (setsid); a group whose
// leader exited and was reaped by init between this process's death and the
// watchdog's kill could in principle have its id reused in that instant.
//
// Outside unix there are no process groups: StartTied only starts the
// command, and Group.Signal kills the process alone.
package procgroup
