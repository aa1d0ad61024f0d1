//go:build linux

package bwrapenv

import "github.com/polyloop/polyloop/bwrapenv/internal/sbinit"

// The protocol of the sandbox's init (package sbinit, which serves it).
// The init lives in its own small package so that it serves before the
// packages of the driver's executable initialize: a driver's init
// functions (a CLI's hundreds) would otherwise run in every sandbox
// before it serves.

const initMarker = sbinit.Marker

const (
	stageLower = sbinit.StageLower
	stageRW    = sbinit.StageRW
	stageProc  = sbinit.StageProc
	stageDev   = sbinit.StageDev
	stageRoot  = sbinit.StageRoot
)

const (
	opSetup   = sbinit.OpSetup
	opExec    = sbinit.OpExec
	opCancel  = sbinit.OpCancel
	opCopyIn  = sbinit.OpCopyIn
	opCopyOut = sbinit.OpCopyOut
)

type (
	setup       = sbinit.Setup
	mountPoint  = sbinit.MountPoint
	request     = sbinit.Request
	response    = sbinit.Response
	execRequest = sbinit.ExecRequest
)
