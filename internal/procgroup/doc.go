// Package procgroup runs a command in a process group of its own, tied to
// the life of the process that started it, and ends the group as a whole:
// what the executors start (shell commands, stdio MCP servers) is out of the
// reach of a terminal's signals to polyloop's group (Ctrl-C sends SIGINT to
// the whole foreground group), nothing a command leaves in its group
// outlives it, and nothing of the group outlives polyloop when it is killed
// (see StartTied).
//
// Outside unix there are no process groups: StartTied only starts the
// command, and Group.Signal kills the process alone.
package procgroup
