// Package procgroup runs a command as the leader of a process group of its
// own and ends the group as a whole: what the executors start (shell
// commands, stdio MCP servers) is out of the reach of a terminal's signals
// to polyloop's group (Ctrl-C sends SIGINT to the whole foreground group),
// and nothing a command leaves in its group outlives it.
//
// Outside unix there are no process groups: Attr is nil and Signal kills
// the process alone.
package procgroup
