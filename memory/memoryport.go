package memory

import "github.com/polyloop/polyloop/memory/memoryport"

// The memory port — entries, writes and commits, view versions, the store
// interfaces the stores implement and their encoding — is the leaf package
// memoryport, which the stores import without this package (and what it
// links). Its types are Memory's and View's, under these names.
type (
	EntryID      = memoryport.EntryID
	Provenance   = memoryport.Provenance
	Entry        = memoryport.Entry
	Expect       = memoryport.Expect
	Basis        = memoryport.Basis
	OpKind       = memoryport.OpKind
	Op           = memoryport.Op
	Write        = memoryport.Write
	EntryVersion = memoryport.EntryVersion
	Commit       = memoryport.Commit
	ViewVersion  = memoryport.ViewVersion
	ViewRef      = memoryport.ViewRef
	ViewWrite    = memoryport.ViewWrite
	Store        = memoryport.Store
	ViewStore    = memoryport.ViewStore
)

// The operation kinds (memoryport.OpPut, memoryport.OpDelete).
const (
	OpPut    = memoryport.OpPut
	OpDelete = memoryport.OpDelete
)

// The errors of the ports (memoryport). Test for them with errors.Is.
var (
	ErrBasisMismatch = memoryport.ErrBasisMismatch
	ErrWriteIDReused = memoryport.ErrWriteIDReused
	ErrNoVersion     = memoryport.ErrNoVersion
	ErrPortContract  = memoryport.ErrPortContract
)
