package polyloop_test

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The core never imports an adapter (STYLE §8): the root package and diag may
// import only the standard library and each other.
func TestCoreImportsNoAdapter(t *testing.T) {
	for _, dir := range []string{".", "diag"} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			file, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range file.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				if path == "github.com/polyloop/polyloop/diag" {
					continue
				}
				if strings.Contains(strings.Split(path, "/")[0], ".") {
					t.Errorf("%s imports %s: the core may import only the standard library and diag", f, path)
				}
			}
		}
	}
}
