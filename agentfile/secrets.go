package agentfile

import (
	"math"
	"regexp"
	"slices"
	"strings"

	"github.com/goccy/go-yaml/ast"
)

// Secrets are read from the environment only. An agent file is copied,
// committed and shared, and what it holds may reach the run's snapshot; so a
// value that looks like a secret is refused, wherever it is, and the message
// never repeats the value.

// keyPatterns are the shapes of well-known credentials.
var keyPatterns = []struct {
	name string
	re   *regexp.Regexp
}{
	{"an Anthropic API key (sk-ant-...)", regexp.MustCompile(`\bsk-ant-[A-Za-z0-9_-]{16,}`)},
	{"an OpenAI-style API key (sk-...)", regexp.MustCompile(`\bsk-[A-Za-z0-9_-]{20,}`)},
	{"a GitHub token", regexp.MustCompile(`\b(gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})`)},
	{"a GitLab token", regexp.MustCompile(`\bglpat-[A-Za-z0-9_-]{20,}`)},
	{"a Slack token", regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9-]{10,}`)},
	{"an AWS access key id", regexp.MustCompile(`\bAKIA[0-9A-Z]{16}\b`)},
	{"a Google API key", regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}`)},
	{"a bearer token", regexp.MustCompile(`\b[Bb]earer\s+[A-Za-z0-9._~+/=-]{20,}`)},
}

// secretSuffixes mark a key-ish field name (compared upper-cased, with
// dashes as underscores): its value is a secret.
var secretSuffixes = []string{"KEY", "APIKEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "CREDENTIALS", "AUTH", "AUTHORIZATION", "PAT", "COOKIE"}

// keyish reports whether a field name says its value is a secret. Names
// ending in _ENV name a variable and are not secrets.
func keyish(name string) bool {
	n := strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
	if strings.HasSuffix(n, "_ENV") {
		return false
	}
	for _, s := range secretSuffixes {
		if n == s || strings.HasSuffix(n, "_"+s) {
			return true
		}
	}
	return strings.HasSuffix(n, "APIKEY")
}

// looksLikeSecret reports whether a value found under a key-ish name looks
// like a secret: a single token of 8 characters or more, not a reference to an
// environment variable.
func looksLikeSecret(v string) bool {
	v = strings.TrimSpace(v)
	if len(v) < 8 || strings.ContainsAny(v, " \t\n") || strings.HasPrefix(v, "$") {
		return false
	}
	return entropy(v) >= 2.5
}

// entropy is the Shannon entropy of s in bits per character.
func entropy(s string) float64 {
	counts := map[rune]int{}
	n := 0
	for _, r := range s {
		counts[r]++
		n++
	}
	var h float64
	for _, c := range counts {
		p := float64(c) / float64(n)
		h -= p * math.Log2(p)
	}
	return h
}

// scanSecrets walks every value of the document and reports the ones that
// look like secrets: by their shape everywhere, and by the key-ish name of
// their field where keys are configuration names (see dataKeys).
func (v *validator) scanSecrets(root ast.Node) {
	v.walkSecrets(root, nil, "")
}

// walkSecrets checks the values under n. at is the path of mapping keys from
// the document's root (sequence items add none); key is the field name the
// name rule reads for n's values, "" for none.
func (v *validator) walkSecrets(n ast.Node, at []string, key string) {
	switch n := n.(type) {
	case *ast.MappingNode:
		for _, mv := range n.Values {
			v.walkSecrets(mv, at, "")
		}
	case *ast.MappingValueNode:
		k := ""
		if n.Key != nil {
			k = n.Key.String()
		}
		name := k
		if dataKeys(at) {
			name = ""
		}
		v.walkSecrets(n.Value, append(slices.Clip(at), k), name)
	case *ast.SequenceNode:
		for _, item := range n.Values {
			v.walkSecrets(item, at, key)
		}
	case *ast.AnchorNode:
		v.walkSecrets(n.Value, at, key)
	case *ast.TagNode:
		v.walkSecrets(n.Value, at, key)
	case *ast.LiteralNode:
		if n.Value != nil {
			v.checkSecret(n.Value, n.Value.Value, key)
		}
	case *ast.StringNode:
		v.checkSecret(n, n.Value, key)
	case *ast.IntegerNode, *ast.FloatNode:
		v.checkSecret(n, n.GetToken().Value, key)
	}
}

// dataKeys reports whether the keys of the mapping at path are user data
// rather than configuration names, so that the key-ish name rule does not
// apply to them: a scripted turn's tool arguments (at any depth: {key:
// user_profile_42} is an argument), the tool names of an MCP server's replay
// overrides and approvals ({refresh_token: never_replay}; the values are
// checked against the policies and modes), the header names of its
// headers_env (the values name environment variables), and a deferred
// tool's parameter schema (at any depth: its property names are the
// tool's). Value shapes (sk-..., tokens) are checked there all the same.
func dataKeys(at []string) bool {
	switch {
	case len(at) >= 3 && at[0] == "model" && at[1] == "script" && at[2] == "args":
		return true
	case len(at) == 3 && at[0] == "tools" && at[1] == "mcp" && (at[2] == "replay" || at[2] == "approval" || at[2] == "headers_env"):
		return true
	case len(at) >= 3 && at[0] == "tools" && at[1] == "deferred" && at[2] == "parameters":
		return true
	}
	return false
}

func (v *validator) checkSecret(n ast.Node, value, key string) {
	what := secretIn(value, key)
	if what == "" {
		return
	}
	e := &Error{File: v.loc.file, Msg: "this value " + what + secretAdvice, Err: ErrSecret}
	if tk := n.GetToken(); tk != nil && tk.Position != nil {
		e.Line, e.Column = tk.Position.Line, tk.Position.Column
	}
	v.errs = append(v.errs, e)
}

const secretAdvice = ": secrets are read from the environment only " +
	"(model keys from OPENAI_API_KEY / ANTHROPIC_API_KEY or the variable named by model.api_key_env; " +
	"tool and server variables from the host through env_allow)"

// secretIn says what secret value looks like, found under the field name
// key, or "" when it looks like none.
func secretIn(value, key string) string {
	for _, p := range keyPatterns {
		if p.re.MatchString(value) {
			return "looks like " + p.name
		}
	}
	if keyish(key) && looksLikeSecret(value) {
		return "is a credential-like value under the key-ish name " + key
	}
	return ""
}

// secretError is the error for a secret found by a field check.
func (v *validator) secretError(p path, what string) *Error {
	e := v.loc.errorAt(p, what+": secrets are read from the environment only")
	e.Err = ErrSecret
	return e
}
