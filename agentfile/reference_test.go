package agentfile

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/polyloop/polyloop/internal/agentschema"
)

// The reference and the schema of the agent file, which these tests keep
// true to spec.go, and their names in messages.
const (
	referencePath = "../docs/agent-file.md"
	schemaPath    = "../docs/agent-file.schema.json"
	referenceName = "docs/agent-file.md"
	schemaName    = "docs/agent-file.schema.json"
)

// specKey is a key of the agent file: its path ("model.script[].args") and
// the Go field that holds it.
type specKey struct {
	path, field string
}

// specKeys lists every key of the agent file, from File's yaml tags: a list
// of mappings adds "[]" to its key; the keys of a map (env, replay, args)
// are the user's, not the file's.
func specKeys() []specKey {
	var keys []specKey
	var walk func(t reflect.Type, prefix string)
	walk = func(t reflect.Type, prefix string) {
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if name == "" || name == "-" {
				continue
			}
			p := prefix + name
			keys = append(keys, specKey{path: p, field: t.Name() + "." + f.Name})
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			switch {
			case ft.Kind() == reflect.Struct:
				walk(ft, p+".")
			case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
				walk(ft.Elem(), p+"[].")
			}
		}
	}
	walk(reflect.TypeFor[File](), "")
	return keys
}

// documentedKeys are the keys the reference's tables describe: the first
// cell of each row, in backquotes.
func documentedKeys(t *testing.T) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile(referencePath)
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `([a-z_.\\[\\]]+)` \\|")
	keys := map[string]bool{}
	for _, m := range row.FindAllStringSubmatch(string(raw), -1) {
		keys[m[1]] = true
	}
	return keys
}

// TestReferenceDocumentsEveryKey fails when a key of spec.go has no row in
// docs/agent-file.md, or a row names a key spec.go does not have.
func TestReferenceDocumentsEveryKey(t *testing.T) {
	t.Parallel()
	doc := documentedKeys(t)
	spec := map[string]bool{}
	for _, k := range specKeys() {
		spec[k.path] = true
		if !doc[k.path] {
			t.Errorf("%s does not document the agent-file key `%s` (agentfile/spec.go, %s): add a row for it "+
				"(its type, default and an example) to the table of its section", referenceName, k.path, k.field)
		}
	}
	for _, k := range slices.Sorted(mapKeys(doc)) {
		if !spec[k] {
			t.Errorf("%s documents the key `%s`, which agentfile/spec.go does not have: remove or rename its row", referenceName, k)
		}
	}
}

// schemaKeys lists the keys the schema describes, following $ref into
// $defs: a property with properties of its own adds its keys, an array of
// such objects adds "[]".
func schemaKeys(t *testing.T) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	var root map[string]any
	if err := json.Unmarshal(raw, &root); err != nil {
		t.Fatalf("%s: %v", schemaPath, err)
	}
	defs, _ := root["$defs"].(map[string]any)
	resolve := func(s map[string]any) map[string]any {
		for {
			ref, ok := s["$ref"].(string)
			if !ok {
				return s
			}
			next, ok := defs[strings.TrimPrefix(ref, "#/$defs/")].(map[string]any)
			if !ok {
				t.Fatalf("%s: unresolvable $ref %q", schemaPath, ref)
			}
			s = next
		}
	}
	keys := map[string]bool{}
	var walk func(s map[string]any, prefix string)
	walk = func(s map[string]any, prefix string) {
		props, _ := resolve(s)["properties"].(map[string]any)
		for name, v := range props {
			p := prefix + name
			keys[p] = true
			ps := resolve(v.(map[string]any))
			if _, ok := ps["properties"]; ok {
				walk(ps, p+".")
			}
			if items, ok := ps["items"].(map[string]any); ok {
				if _, ok := resolve(items)["properties"]; ok {
					walk(items, p+"[].")
				}
			}
		}
	}
	walk(root, "")
	return keys
}

// TestSchemaCoversEveryKey fails when a key of spec.go is missing from
// docs/agent-file.schema.json, or the schema has a property spec.go does
// not have (it would accept what polyloop refuses).
func TestSchemaCoversEveryKey(t *testing.T) {
	t.Parallel()
	schema := schemaKeys(t)
	spec := map[string]bool{}
	for _, k := range specKeys() {
		spec[k.path] = true
		if !schema[k.path] {
			t.Errorf("%s has no property for the agent-file key `%s` (agentfile/spec.go, %s): add it", schemaName, k.path, k.field)
		}
	}
	for _, k := range slices.Sorted(mapKeys(schema)) {
		if !spec[k] {
			t.Errorf("%s has the property `%s`, which agentfile/spec.go does not have: remove or rename it", schemaName, k)
		}
	}
}

func mapKeys(m map[string]bool) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// exampleFile is an agent file shown to users: in examples/, or a YAML
// block of the reference.
type exampleFile struct {
	name string
	src  []byte
}

func exampleFiles(t *testing.T) []exampleFile {
	t.Helper()
	var out []exampleFile
	files, err := filepath.Glob("../examples/*.yaml")
	if err != nil || len(files) < 3 {
		t.Fatalf("examples: %v, %v", files, err)
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, exampleFile{f, src})
	}
	doc, err := os.ReadFile(referencePath)
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile("(?s)```yaml\n(.*?)```")
	for i, m := range block.FindAllSubmatch(doc, -1) {
		out = append(out, exampleFile{fmt.Sprintf("%s, YAML block %d", referenceName, i+1), m[1]})
	}
	if len(out) < 6 {
		t.Fatalf("found %d example agent files", len(out))
	}
	return out
}

// TestExamplesPassCheckAndSchema: every agent file shown to users is
// accepted by polyloop's check and by the JSON Schema.
func TestExamplesPassCheckAndSchema(t *testing.T) {
	t.Parallel()
	rs, err := agentschema.Load(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, ex := range exampleFiles(t) {
		if err := agentschema.Validate(rs, ex.src); err != nil {
			t.Errorf("%s does not match %s: %v", ex.name, schemaName, err)
		}
		p := ex.name
		if !strings.HasPrefix(p, "../examples/") {
			dir := t.TempDir()
			p = filepath.Join(dir, "agent.yaml")
			if err := os.WriteFile(p, ex.src, 0o644); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(ex.src), "system_file: prompt.md") {
				if err := os.WriteFile(filepath.Join(dir, "prompt.md"), []byte("You write code."), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
		if _, err := Check(p); err != nil {
			t.Errorf("%s: polyloop's check refuses it: %v", ex.name, err)
		}
	}
}

// TestSchemaRefusesWhatCheckRefuses: the schema is not vacuous — files that
// polyloop refuses for their structure, the schema refuses too.
func TestSchemaRefusesWhatCheckRefuses(t *testing.T) {
	t.Parallel()
	rs, err := agentschema.Load(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	for name, src := range map[string]string{
		"unknown key":             scriptHead + "limits: {max_step: 3}\n",
		"wrong type":              scriptHead + "limits: {max_steps: many}\n",
		"not an integer":          scriptHead + "limits: {max_steps: 1.5}\n",
		"unknown provider":        "name: a\nmodel: {provider: gemini, model: m}\n",
		"no name":                 "model: {provider: script, script: [{text: hi}]}\n",
		"script without turns":    "name: a\nmodel: {provider: script}\n",
		"remote without model":    "name: a\nmodel: {provider: openai}\n",
		"script with base_url":    scriptHead + "  base_url: http://h/v1\n",
		"anthropic temperature":   "name: a\nmodel: {provider: anthropic, model: m, temperature: 0}\n",
		"empty turn":              "name: a\nmodel: {provider: script, script: [{delay_ms: 5}]}\n",
		"mcp command and url":     scriptHead + "tools:\n  mcp: [{name: x, command: c, url: 'http://h/mcp'}]\n",
		"mcp without target":      scriptHead + "tools:\n  mcp: [{name: x}]\n",
		"bad replay policy":       scriptHead + "tools:\n  shell: {replay: sometimes}\n",
		"bad env name":            scriptHead + "tools:\n  shell: {env_allow: ['not a name']}\n",
		"unknown parser kind":     scriptHead + "parser: {kind: regex}\n",
		"both prompts":            scriptHead + "system: a\nsystem_file: b\n",
		"oauth on a command":      scriptHead + "tools:\n  mcp: [{name: x, command: c, oauth: {}}]\n",
		"unknown grant":           scriptHead + "tools:\n  mcp: [{name: x, url: 'http://h/mcp', oauth: {grant: password}}]\n",
		"grant without secret":    scriptHead + "tools:\n  mcp: [{name: x, url: 'http://h/mcp', oauth: {grant: client_credentials, client_id_env: ID}}]\n",
		"secret without client":   scriptHead + "tools:\n  mcp: [{name: x, url: 'http://h/mcp', oauth: {client_secret_env: S}}]\n",
		"metadata over http":      scriptHead + "tools:\n  mcp: [{name: x, url: 'http://h/mcp', oauth: {client_metadata_url: 'http://h/c.json'}}]\n",
		"prefix with a space":     scriptHead + "tools:\n  mcp: [{name: x, command: c, prefix: 'a b'}]\n",
		"negative max actions":    scriptHead + "parser: {options: {max_actions_per_step: -1}}\n",
		"check_args not a bool":   scriptHead + "parser: {options: {check_args: 'yes'}}\n",
		"parallel not a bool":     scriptHead + "parallel_actions: 1\n",
		"price without output":    "name: a\nmodel: {provider: openai, model: m, prices: {m: {input: 1}}}\n",
		"negative price":          "name: a\nmodel: {provider: openai, model: m, prices: {m: {input: -1, output: 1}}}\n",
		"prices on a script":      scriptHead + "  prices: {m: {input: 1, output: 1}}\n",
		"approval policy":         scriptHead + "tools:\n  shell: {approval: policy}\n",
		"deadline not duration":   scriptHead + "tools:\n  shell: {approval: required, approval_deadline: tomorrow}\n",
		"deadline, no approval":   scriptHead + "tools:\n  mcp: [{name: x, command: c, approval_deadline: 1h}]\n",
		"deferred without name":   scriptHead + "tools:\n  deferred: [{description: d}]\n",
		"deferred not object":     scriptHead + "tools:\n  deferred: [{name: r, parameters: {type: string}}]\n",
		"deferred bad deadline":   scriptHead + "tools:\n  deferred: [{name: r, deadline: 3d}]\n",
		"memory unknown key":      scriptHead + "memory: {namespace: [n]}\n",
		"namespace twice":         scriptHead + "memory: {namespaces: [n, n]}\n",
		"namespace with a tab":    scriptHead + "memory: {namespaces: [\"a\\tb\"]}\n",
		"unknown conflict rule":   scriptHead + "memory: {maintain: {on_conflict: retry}}\n",
		"view rejected regen":     scriptHead + "memory: {maintain: {on_view_rejected: regenerate}}\n",
		"proposals without regen": scriptHead + "memory: {maintain: {on_conflict: skip, max_proposals: 2}}\n",
		"negative max entries":    scriptHead + "memory: {maintain: {max_entries: -1}}\n",
	} {
		if err := agentschema.Validate(rs, []byte(src)); err == nil {
			t.Errorf("%s: the schema accepts\n%s", name, src)
		}
		if _, err := Check(writeFile(t, "agent.yaml", src)); err == nil {
			t.Errorf("%s: polyloop's check accepts\n%s", name, src)
		}
	}
}

// TestReferenceExamplesUseEveryKey: each key of spec.go is shown in use in
// one of the reference's YAML examples.
func TestReferenceExamplesUseEveryKey(t *testing.T) {
	t.Parallel()
	spec := map[string]bool{}
	for _, k := range specKeys() {
		spec[k.path] = true
	}
	under := func(prefix string) bool {
		for k := range spec {
			if strings.HasPrefix(k, prefix) {
				return true
			}
		}
		return false
	}
	used := map[string]bool{}
	var walk func(v any, prefix string)
	walk = func(v any, prefix string) {
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		for k, x := range m {
			p := prefix + k
			used[p] = true
			if under(p + ".") {
				walk(x, p+".")
			}
			if items, ok := x.([]any); ok && under(p+"[].") {
				for _, it := range items {
					walk(it, p+"[].")
				}
			}
		}
	}
	for _, ex := range exampleFiles(t) {
		if !strings.HasPrefix(ex.name, referenceName) {
			continue
		}
		var doc any
		if err := yaml.Unmarshal(ex.src, &doc); err != nil {
			t.Fatalf("%s: %v", ex.name, err)
		}
		walk(doc, "")
	}
	for _, k := range specKeys() {
		if !used[k.path] {
			t.Errorf("no YAML example of %s uses the key `%s` (agentfile/spec.go, %s): show it in one", referenceName, k.path, k.field)
		}
	}
}
