package codeparser

import (
	"fmt"
	"strings"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/feedback"
)

// maxLangsNamed bounds how many other languages the no-block feedback names.
const maxLangsNamed = 5

// maxLangLen bounds the length of a language named in feedback.
const maxLangLen = 32

func (p *Parser) fence() string { return "```" + p.tags[0] }

func (p *Parser) noBlock(blocks []Block) polyloop.Invalid {
	var b strings.Builder
	fmt.Fprintf(&b, "Your reply contains no %s code block. Reply with exactly one %s block holding the code to run.", p.fence(), p.fence())
	if others := otherLangs(blocks); len(others) > 0 {
		fmt.Fprintf(&b, " (Found %s; only %s blocks are run.)", strings.Join(others, ", "), p.fence())
	}
	if p.marker != "" {
		fmt.Fprintf(&b, " To finish, write a line starting with %q followed by your final answer.", p.marker)
	}
	return polyloop.Invalid{Feedback: b.String()}
}

// otherLangs names the distinct languages of non-matching blocks, in order
// of appearance, bounded.
func otherLangs(blocks []Block) []string {
	var out []string
	seen := map[string]bool{}
	for _, b := range blocks {
		name := "a code block without a language"
		if b.Lang != "" {
			name = "a ```" + feedback.Bounded(b.Lang, maxLangLen) + " block"
		}
		if seen[name] {
			continue
		}
		seen[name] = true
		if len(out) == maxLangsNamed {
			out = append(out, "and others")
			break
		}
		out = append(out, name)
	}
	return out
}

func (p *Parser) several(n int) polyloop.Invalid {
	return polyloop.Invalid{Feedback: fmt.Sprintf(
		"Your reply contains %d %s code blocks; send exactly one per turn. Put all the code for this step in a single %s block.",
		n, p.fence(), p.fence())}
}

func (p *Parser) unclosed(b Block) polyloop.Invalid {
	return polyloop.Invalid{Feedback: fmt.Sprintf(
		"The %s code block opened at line %d of your reply is never closed. End it with a closing fence (```) on its own line.",
		p.fence(), b.Line)}
}

func (p *Parser) empty() polyloop.Invalid {
	return polyloop.Invalid{Feedback: fmt.Sprintf(
		"The %s code block in your reply is empty. Put the code to run inside it.", p.fence())}
}

func (p *Parser) bothCodeAndFinal() polyloop.Invalid {
	return polyloop.Invalid{Feedback: fmt.Sprintf(
		"Your reply contains both a %s code block and the final-answer marker %q. Either run code or give the final answer, not both.",
		p.fence(), p.marker)}
}
