package polyloop_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/polyloop/polyloop"

// The layers of the module, each with the layers its packages may import
// (besides the standard library and, but for the core, outside modules):
//
//	core      the root package: diag only (STYLE §8: the core never imports an adapter)
//	diag      nothing of the module
//	port      leaf ports the stores implement (memory/memoryport, sweep/ledger): the core, diag
//	adapter   stores, model clients, parsers, executors, sinks: the core, diag, internal/*, ports
//	          (an adapter's own sub-packages aside: no adapter imports another)
//	kit       conformance kits (polylooptest, ledgertest): the core, diag, ports, internal/*
//	internal  internal/*: anything but apps
//	feature   memory, agentfile, sweep, view…: anything but kits and apps
//	app       bench, cmd/*, examples/*: anything
var layerMay = map[string][]string{
	"core":     {"diag"},
	"diag":     {},
	"port":     {"core", "diag"},
	"adapter":  {"core", "diag", "internal", "port"},
	"kit":      {"core", "diag", "port", "internal"},
	"internal": {"core", "diag", "port", "adapter", "kit", "internal", "feature"},
	"feature":  {"core", "diag", "port", "adapter", "internal", "feature"},
	"app":      {"core", "diag", "port", "adapter", "kit", "internal", "feature", "app"},
}

// The lists name packages by their path in the module; a name no package
// has yet is harmless (the environments' backends and snapshot stores are
// listed ahead of their arrival).
var (
	ports    = []string{"memory/memoryport", "sweep/ledger", "envsnap"}
	kits     = []string{"polylooptest", "sweep/ledger/ledgertest"}
	adapters = []string{"memstore", "sqlitestore", "pgstore", "openaimodel", "anthropicmodel", "scriptmodel", "replaymodel",
		"toolcallparser", "jsonparser", "codeparser", "funcexec", "shellexec", "mcpexec", "slogsink", "otelsink",
		"bwrapenv", "dockerenv", "snapshotstore", "pgsnapshots"}
	apps = []string{"bench", "cmd", "examples"}
)

// layerOf is the layer of a package, by its path in the module ("." for
// the root), and the adapter it belongs to.
func layerOf(rel string) (layer, adapter string) {
	top := strings.Split(rel, "/")[0]
	switch {
	case rel == ".":
		return "core", ""
	case rel == "diag":
		return "diag", ""
	case slices.Contains(ports, rel):
		return "port", ""
	case slices.Contains(kits, rel):
		return "kit", ""
	case slices.Contains(adapters, top):
		return "adapter", top
	case top == "internal":
		return "internal", ""
	case slices.Contains(apps, top):
		return "app", ""
	}
	return "feature", ""
}

// TestForbiddenImports checks every import of every package of the module
// (its non-test files) against the layers above, after pebble's test of
// the same name: the map of who may import whom is this test.
func TestForbiddenImports(t *testing.T) {
	imports := moduleImports(t)
	if len(imports) < 40 {
		t.Fatalf("found only %d packages", len(imports))
	}
	for pkg, imps := range imports {
		layer, adapter := layerOf(pkg)
		for _, imp := range imps {
			if !strings.HasPrefix(imp, module+"/") && imp != module {
				if (layer == "core" || layer == "diag") && strings.Contains(strings.Split(imp, "/")[0], ".") {
					t.Errorf("%s (%s) imports %s: the core and diag import only the standard library and the module", pkg, layer, imp)
				}
				continue
			}
			rel := strings.TrimPrefix(strings.TrimPrefix(imp, module), "/")
			if rel == "" {
				rel = "."
			}
			to, toAdapter := layerOf(rel)
			if adapter != "" && adapter == toAdapter {
				continue // an adapter's own sub-packages
			}
			if !slices.Contains(layerMay[layer], to) {
				t.Errorf("%s (%s) imports %s (%s): the %s layer may import only %v", pkg, layer, rel, to, layer, layerMay[layer])
			}
		}
	}
}

// moduleImports maps each package of the module (its directory, "." for
// the root) to the imports of its non-test files.
func moduleImports(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); p != "." && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(path.Dir(filepath.ToSlash(p)))
		for _, imp := range f.Imports {
			s, _ := strconv.Unquote(imp.Path.Value)
			out[dir] = append(out[dir], s)
		}
		if _, ok := out[dir]; !ok {
			out[dir] = nil
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
