package agentfile

// document says what kind of file the strict decoder reads, for its
// messages.
type document struct {
	// noun names the file ("agent file").
	noun string
	// shape says what the file must hold, for an empty file.
	shape string
	// fields says what the top-level mapping holds, for a file that is not
	// a mapping.
	fields string
	// reference is the reference unknown-key messages point to.
	reference string
	// tooLarge is the advice for a file over MaxFileSize.
	tooLarge string
}

// article is the noun with its indefinite article ("an agent file").
func (d *document) article() string {
	switch d.noun[0] {
	case 'a', 'e', 'i', 'o', 'u':
		return "an " + d.noun
	}
	return "a " + d.noun
}

var agentDocument = &document{
	noun:      "agent file",
	shape:     "an agent file is a mapping with at least name and model (docs/agent-file.md)",
	fields:    "agent fields (name, model, parser, tools, limits, ...)",
	reference: "docs/agent-file.md",
	tooLarge:  "keep long texts in files (system_file)",
}

// Document describes a kind of YAML configuration file other than an agent
// file, for Decode's messages.
type Document struct {
	// Noun names the file in messages ("sweep file").
	Noun string
	// Shape says what the file must hold, for an empty file ("a sweep file
	// is a mapping with at least name, agents and tasks (docs/sweeps.md)").
	Shape string
	// Fields says what its top-level mapping holds, for a file that is not
	// a mapping ("sweep fields (name, agents, tasks, epochs, ...)").
	Fields string
	// Reference is the reference unknown-key messages point to
	// ("docs/sweeps.md").
	Reference string
	// TooLarge is the advice for a file over MaxFileSize.
	TooLarge string
}

// Checker places the problems that a caller of Decode finds in the decoded
// value at their file, line and column.
type Checker struct {
	v *validator
}

// Fail records a problem with the value at the path keys: field names
// (strings) and list indexes (ints) from the document's root, such as
// ("scorers", 1, "pattern"). It is placed at the value, or at the nearest
// enclosing value present when the value is absent (a missing field). A
// problem under a value that did not decode is dropped: it would only be
// about the zero value left there, and that value's own problem is already
// reported.
func (c *Checker) Fail(msg string, keys ...any) {
	c.v.fail(path(keys), "%s", msg)
}

// Decode reads the YAML file name and decodes its one document into v, a
// pointer to a struct whose fields have yaml tags, the way Check reads an
// agent file: strictly (every unknown key, duplicate key and value of the
// wrong type is a problem; a string takes any scalar as written, the other
// kinds only their own), under the same limits (MaxFileSize, MaxDepth,
// MaxAliases, MaxAliasExpansion), refusing values that look like secrets.
// The types v may hold are those of the agent file's spec: strings,
// booleans, integers, floats, pointers, structs, slices, maps with string
// keys and any.
//
// When the file decoded without a secret, check (if not nil) is called to
// check the decoded value, recording its problems with Checker.Fail. Every
// problem is reported at once, each with its file, line and column: the
// error is an *Error or an ErrorList of them, in file order, matching
// ErrInvalid (and ErrSecret or ErrLimit). A syntax error or a limit stops
// the decoding where it is found.
func Decode(name string, doc Document, v any, check func(*Checker)) error {
	d, err := decodeInto(name, &document{noun: doc.Noun, shape: doc.Shape, fields: doc.Fields,
		reference: doc.Reference, tooLarge: doc.TooLarge}, v)
	if err != nil {
		return err
	}
	val := &validator{loc: d.loc, errs: d.errs, skip: d.failed}
	if !d.secret && check != nil {
		check(&Checker{v: val})
	}
	return val.sorted().err()
}
