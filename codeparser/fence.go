package codeparser

import "github.com/polyloop/polyloop/internal/fence"

// Block is one fenced code block of a reply (see Blocks).
type Block = fence.Block

// Blocks returns the fenced code blocks of text in order, as CommonMark
// defines fences: the fence reader Parse uses (and jsonparser too, through
// the same internal reader). A backtick fence whose info string contains a
// backtick is not a fence (it is inline code, as in CommonMark).
func Blocks(text string) []Block { return fence.Blocks(text) }
