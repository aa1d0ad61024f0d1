package trajectory_test

import (
	"context"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/internal/runfixture"
	"github.com/polyloop/polyloop/internal/trajectory"
	"github.com/polyloop/polyloop/memstore"
)

// TestInvocationsOfMaintenance: a run whose steps are maintained — an
// operation, a proposal child received, a proposal that failed and was
// skipped, maintenance_done — written without interruption is one
// invocation.
func TestInvocationsOfMaintenance(t *testing.T) {
	t.Parallel()
	st := memstore.New()
	runfixture.Remembering(t, st, runfixture.NewClock(runfixture.Base), runfixture.MemoryRun, "the goal")
	tr := load(t, st, runfixture.MemoryRun)
	log, err := polyloop.ReadLog(context.Background(), st, runfixture.MemoryRun)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, r := range log.Records {
		k := string(r.Kind())
		if c, ok := r.Body.(*polyloop.ChildReception); ok && c.Maintenance {
			k = "maintenance child_reception"
		}
		kinds[k]++
	}
	for _, k := range []string{"maintenance_op", "maintenance child_reception", "maintenance_done"} {
		if kinds[k] == 0 {
			t.Fatalf("the run has no %s: %v", k, kinds)
		}
	}
	if tr.Finished == nil || tr.Finished.StopReason != polyloop.StopCompleted {
		t.Fatalf("finish %+v", tr.Finished)
	}
	if len(tr.Invocations) != 1 {
		var ev []string
		for _, inv := range tr.Invocations[1:] {
			ev = append(ev, inv.Evidence)
		}
		t.Errorf("%d invocations, want 1: %q", len(tr.Invocations), ev)
	}
}

// TestEveryRecordKindIsClassified: Invocations knows, for every record kind
// of the log format — every RecordKind constant of the root package, and
// every kind the log's JSON Schema lists — whether an uninterrupted
// invocation may begin a write with it, so that a new kind cannot be
// forgotten (it would be taken for a resume).
func TestEveryRecordKindIsClassified(t *testing.T) {
	t.Parallel()
	known := trajectory.ClassifiedKinds()
	kinds := rootRecordKinds(t)
	for k := range schemaKinds(t) {
		kinds[k] = true
	}
	if len(kinds) < 16 {
		t.Fatalf("found only %d record kinds: %v", len(kinds), kinds)
	}
	for k := range kinds {
		if !known[k] {
			t.Errorf("record kind %q is not classified in invocations.go's writeStarts", k)
		}
	}
	for k := range known {
		if !kinds[k] {
			t.Errorf("writeStarts classifies %q, which is no record kind", k)
		}
	}
}

// rootRecordKinds are the values of the RecordKind constants declared in
// the root package's sources.
func rootRecordKinds(t *testing.T) map[polyloop.RecordKind]bool {
	t.Helper()
	pkgs, err := parser.ParseDir(token.NewFileSet(), "../..", func(fi os.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[polyloop.RecordKind]bool{}
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
					out[polyloop.RecordKind(s)] = true
				}
			}
		}
	}
	return out
}

// schemaKinds are the kinds docs/log-format.schema.json lists.
func schemaKinds(t *testing.T) map[polyloop.RecordKind]bool {
	t.Helper()
	data, err := os.ReadFile("../../docs/log-format.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Properties struct {
			Kind struct {
				Enum []polyloop.RecordKind `json:"enum"`
			} `json:"kind"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	out := map[polyloop.RecordKind]bool{}
	for _, k := range s.Properties.Kind.Enum {
		out[k] = true
	}
	return out
}
