//go:build !unix

package main

import "os"

// terminalSize is unknown here: the defaults apply.
func terminalSize(*os.File) (width, height int) { return 0, 0 }
