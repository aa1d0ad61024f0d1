// Package jsonparser is a polyloop.DecisionParser for agents that write
// their action as JSON in the reply's text.
//
// # Accepted shapes
//
// An action:
//
//	{"tool": "read_file", "args": {"path": "notes.txt"}}
//
// "arguments" is accepted in place of "args" (not both). "args" must be a
// JSON object; null means {}. Without "args", the action has no arguments.
//
// Arguments flattened to the action level:
//
//	{"tool": "read_file", "path": "notes.txt"}  → args {"path": "notes.txt"}
//
// The rule: an action object without "args" (or "arguments") takes every
// field other than "tool" and the ignored fields (Options.Ignore) as its
// arguments, in the order written. When Options.Tools lists the tool and its
// parameter schema declares "properties", every flattened field must be one
// of them, or the reply is Invalid naming the fields that are not; for any
// other tool the flattened fields are taken as they are (the executor judges
// them). An action object with "args" and other fields is Invalid (unknown
// fields). So arguments named "tool", "args", "arguments" or "final", or
// named like an ignored field, must go inside "args".
//
// Several actions, a batch run in the array's order:
//
//	[{"tool": "read_file", "args": {"path": "a.txt"}},
//	 {"tool": "read_file", "path": "b.txt"}]
//
// Each element is an action object as above. An array of one element is
// that element (an action or a final answer). An element that is not an
// action — not an object, a final answer, an object with one of the
// failures below — makes the whole reply Invalid: no action of it runs,
// and the feedback names every such element by its place. An array of more
// than Options.MaxActionsPerStep elements (when it is positive) is Invalid,
// naming the limit.
//
// A final answer:
//
//	{"final": "The file has 12 lines."}
//
// A string is the answer as is; any other JSON value is the answer as
// compact JSON text. A final object has no other fields (ignored ones
// aside).
//
// # Where the JSON may be
//
// Only the reply's text is read (native tool calls are ignored). It is read
// for fenced code blocks first, the way codeparser reads them (both read
// fences with one reader, internal/fence). A block tagged json, or a block
// without a tag whose content starts with '{' or '[', is a JSON fence. When the reply
// has JSON fences, only their contents are read; otherwise the whole text is
// read, apart from the contents of other fenced blocks (a Python dict in a
// ```python block is not an action). In what is read, every balanced
// top-level {...} region is a candidate, and so is every balanced [...]
// region whose first element opens with '{' (an array of actions); prose
// around them is ignored, and so are brackets that open no object ("see
// [1]", "[]"). Exactly one candidate must be a valid JSON object or array.
// A region that does not decode counts as an attempted action when it looks
// like JSON (it opens with a quoted key, or is {}; an array, by its first
// object), so one valid and one malformed action are "several"; a region
// that does not look like JSON, such as "{path}" in prose, is reported only
// when nothing else is found. A brace in prose that is never closed is
// stepped over (up to 16 of them, to keep the scan linear).
//
// # Failures
//
// Each failure has its own feedback text (testdata/decisions.golden pins
// them all): an empty reply; no JSON object; malformed JSON, with the line
// and column in the reply (columns count characters) and the JSON decoder's
// message; a JSON fence that is never closed, or that holds no object (the
// fence cannot be unwrapped); several separate JSON actions (objects or
// arrays); an array of more actions than the limit; an array with elements
// that are not actions (each named); a field given twice; no
// "tool" field; a "tool" that is not a non-empty string; both "tool" and
// "final"; both "args" and "arguments"; "args" that is not an object;
// unknown fields beside "args" or "final"; flattened fields that are not
// parameters of the tool; arguments that do not match the tool's parameter
// schema (see Options.Tools), naming the field and what it must be; JSON
// that is not valid UTF-8.
//
// Options.TextIsFinal turns a reply holding no JSON object into a Final
// answer, for agents that may answer in prose.
//
// Version changes whenever a decision or a feedback text changes, and it
// is part of Describe, so it enters the run's snapshot.
package jsonparser
