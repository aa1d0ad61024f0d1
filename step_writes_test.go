package polyloop

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestEveryRecordKindHasAWriteBoundary: writeStarts says, for every record
// kind of the log format — every RecordKind constant of this package, and
// every kind the log's JSON Schema lists — whether an invocation that has
// not stopped may begin a write with it, so that a new kind cannot be
// forgotten (a reader would take it for a resume, and the machine would
// refuse to begin a write with it).
func TestEveryRecordKindHasAWriteBoundary(t *testing.T) {
	t.Parallel()
	kinds := constRecordKinds(t)
	for k := range schemaKinds(t) {
		kinds[k] = true
	}
	if len(kinds) < 16 {
		t.Fatalf("found only %d record kinds: %v", len(kinds), kinds)
	}
	for k := range kinds {
		if _, ok := writeStarts[k]; !ok {
			t.Errorf("record kind %q has no entry in writeStarts", k)
		}
	}
	for k := range writeStarts {
		if !kinds[k] {
			t.Errorf("writeStarts classifies %q, which is no record kind", k)
		}
	}
}

// constRecordKinds are the values of the RecordKind constants declared in
// this package's sources.
func constRecordKinds(t *testing.T) map[RecordKind]bool {
	t.Helper()
	pkgs, err := parser.ParseDir(token.NewFileSet(), ".", func(fi os.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[RecordKind]bool{}
	for _, f := range pkgs["polyloop"].Files {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				v := s.(*ast.ValueSpec)
				if id, ok := v.Type.(*ast.Ident); !ok || id.Name != "RecordKind" {
					continue
				}
				for _, val := range v.Values {
					lit, ok := val.(*ast.BasicLit)
					if !ok {
						t.Fatalf("a RecordKind constant that is not a string literal: %v", v.Names)
					}
					s, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					out[RecordKind(s)] = true
				}
			}
		}
	}
	return out
}

// schemaKinds are the kinds docs/log-format.schema.json lists.
func schemaKinds(t *testing.T) map[RecordKind]bool {
	t.Helper()
	data, err := os.ReadFile("docs/log-format.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Properties struct {
			Kind struct {
				Enum []RecordKind `json:"enum"`
			} `json:"kind"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	out := map[RecordKind]bool{}
	for _, k := range s.Properties.Kind.Enum {
		out[k] = true
	}
	return out
}
