// Package codeparser is a polyloop.DecisionParser for agents that act by
// writing code: exactly one fenced code block of the configured language
// (default bash) is a code action.
//
// The rules, in the order they are applied to ModelReply.Text (native tool
// calls are ignored):
//
//   - Fences are read as CommonMark reads them (see Blocks). A block
//     matches when the first word of its info string is one of
//     Options.Tags, compared without case.
//   - A matching block that is never closed is Invalid ("never closed").
//   - With Options.FinalMarker set, a line outside every fenced block that
//     starts with the marker (after optional spaces) ends the run: Final,
//     whose answer is the text after the marker through the end of the
//     reply, trimmed. A reply with both the marker and a matching block is
//     Invalid.
//   - No matching block is Invalid, naming the other languages found, if any.
//   - Several matching blocks are Invalid, naming how many.
//   - A matching block holding only whitespace is Invalid.
//   - Otherwise the block is Act with Action{Lang: Options.Lang, Code: the
//     block's content}. Tool is empty: after a crash the library never
//     replays the action (never_replay), unless the run's environment has
//     no network — then it restores the snapshot the action's intent names
//     and runs it again (restore_and_replay).
//
// Every Invalid decision has its own feedback text, pinned by the golden
// file testdata/decisions.golden. Version changes whenever a decision or a
// feedback text changes, and it is part of Describe, so it enters the run's
// snapshot.
package codeparser

import (
	"encoding/json"
	"strings"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/fence"
)

// Version is the version of the parser's behaviour: its decisions and its
// feedback texts. It enters the snapshot through Describe.
const Version = 1

// DefaultLang is the language of code actions when Options.Lang is empty.
const DefaultLang = "bash"

// Options configure a Parser. The zero value reads ```bash blocks and has no
// final marker.
type Options struct {
	// Lang is the language put in Action.Lang (default DefaultLang).
	Lang string
	// Tags are the info-string languages that mark a matching block,
	// compared without case (default: Lang alone). For example
	// []string{"bash", "sh", "shell"}.
	Tags []string
	// FinalMarker, when set, lets the model finish: a line outside the code
	// blocks starting with it is a Final decision (e.g. "FINAL ANSWER:").
	FinalMarker string
}

// Parser turns a reply holding one fenced code block into a code action. It
// is safe for concurrent use.
type Parser struct {
	lang   string
	tags   []string
	marker string
}

// New returns a Parser with opts, defaults applied.
func New(opts Options) *Parser {
	p := &Parser{lang: opts.Lang, marker: opts.FinalMarker}
	if p.lang == "" {
		p.lang = DefaultLang
	}
	for _, t := range opts.Tags {
		if t = strings.ToLower(strings.TrimSpace(t)); t != "" {
			p.tags = append(p.tags, t)
		}
	}
	if len(p.tags) == 0 {
		p.tags = []string{strings.ToLower(p.lang)}
	}
	return p
}

// config is what Describe reports, in a fixed field order.
type config struct {
	Version     int      `json:"version"`
	Lang        string   `json:"lang"`
	Tags        []string `json:"tags"`
	FinalMarker string   `json:"final_marker,omitempty"`
}

// Describe implements polyloop.Describer: the parser's name, behaviour
// version and options enter the run's snapshot.
func (p *Parser) Describe() polyloop.Component {
	raw, err := json.Marshal(config{Version: Version, Lang: p.lang, Tags: p.tags, FinalMarker: p.marker})
	if err != nil { // cannot happen: plain strings and ints
		panic("codeparser: encoding config: " + err.Error())
	}
	return polyloop.Component{Name: "codeparser", Config: raw}
}

// Parse implements polyloop.DecisionParser. It is deterministic, never
// panics, and does not modify the reply.
func (p *Parser) Parse(reply polyloop.ModelReply) polyloop.Decision {
	blocks := Blocks(reply.Text)
	var matching []Block
	for _, b := range blocks {
		if p.matches(b.Lang) {
			matching = append(matching, b)
		}
	}
	for _, b := range matching {
		if !b.Closed {
			return p.unclosed(b)
		}
	}
	if answer, ok := p.finalAnswer(reply.Text, blocks); ok {
		if len(matching) > 0 {
			return p.bothCodeAndFinal()
		}
		return polyloop.Final{Answer: answer}
	}
	switch {
	case len(matching) == 0:
		return p.noBlock(blocks)
	case len(matching) > 1:
		return p.several(len(matching))
	case strings.TrimSpace(matching[0].Code) == "":
		return p.empty()
	}
	return polyloop.ActOne(polyloop.Action{Lang: p.lang, Code: matching[0].Code})
}

func (p *Parser) matches(lang string) bool {
	for _, t := range p.tags {
		if lang == t {
			return true
		}
	}
	return false
}

// finalAnswer finds the final marker at the start of a line outside every
// block and returns the rest of the text after it, trimmed. Blocks are in
// text order, so one pass over lines and blocks suffices.
func (p *Parser) finalAnswer(text string, blocks []Block) (string, bool) {
	if p.marker == "" {
		return "", false
	}
	next := 0 // first block that does not end before the current line
	for ln := range fence.Lines(text) {
		for next < len(blocks) && blocks[next].End <= ln.Start {
			next++
		}
		if next < len(blocks) && blocks[next].Start <= ln.Start {
			continue // inside a block
		}
		trimmed := strings.TrimLeft(ln.Text, " \t")
		if strings.HasPrefix(trimmed, p.marker) {
			at := ln.Start + (len(ln.Text) - len(trimmed)) + len(p.marker)
			return strings.TrimSpace(text[at:]), true
		}
	}
	return "", false
}
