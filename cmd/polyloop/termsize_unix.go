//go:build unix

package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// terminalSize is the columns and rows of the terminal f; 0, 0 when it does
// not say.
func terminalSize(f *os.File) (width, height int) {
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0, 0
	}
	return int(ws.Col), int(ws.Row)
}
