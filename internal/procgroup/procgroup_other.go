//go:build !unix

package procgroup

import (
	"os"
	"syscall"
)

// Attr is nil: there are no process groups here.
func Attr() *syscall.SysProcAttr { return nil }

// Signal kills p: there are no process groups, nor other signals, here.
func Signal(p *os.Process, _ syscall.Signal) {
	_ = p.Kill()
}
