// Package dsn hides the passwords of database connection strings before
// they are printed: in banners, in error messages, in the command line the
// kernel shows other processes.
package dsn

import (
	"net/url"
	"regexp"
	"strings"
)

// Mask replaces a password.
const Mask = "xxxxx"

// Redact returns s with every password pgx would read from it masked: in a
// URL (postgres://, postgresql://, or any other scheme), the userinfo password and the values
// of the password and sslpassword query parameters; in a keyword/value
// string, the values of password and sslpassword, quoted or not. Anything
// else of s is left as it is, so that a store spec such as sqlite:PATH
// reads the same. Where a malformed string leaves it unclear where a
// password ends, Redact masks more than the password, never less.
func Redact(s string) string {
	if rest, ok := cutScheme(s); ok {
		return s[:len(s)-len(rest)] + redactURL(rest)
	}
	if !passwordKey.MatchString(s) {
		return s
	}
	if out, ok := redactKeywords(s); ok {
		return out
	}
	return looseKeyword.ReplaceAllString(s, "${1}"+Mask)
}

// cutScheme returns what follows a URL's scheme and "://": a PostgreSQL
// URL, or any other a user might mistake for one (mysql://).
func cutScheme(s string) (string, bool) {
	m := scheme.FindStringIndex(s)
	if m == nil {
		return "", false
	}
	return s[m[1]:], true
}

var scheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*://`)

// redactURL masks the passwords of a URL after its scheme. The userinfo
// ends at the last '@' before the first '/' (pgx's own lookahead); a '@'
// stranded after a '/' (a password holding an unencoded '/') masks from
// the first ':' to the last '@'.
func redactURL(p string) string {
	var b strings.Builder
	authority := p
	if i := strings.IndexByte(p, '/'); i >= 0 {
		authority = p[:i]
	}
	if at := strings.LastIndexByte(authority, '@'); at >= 0 {
		user, _, hasPassword := strings.Cut(p[:at], ":")
		b.WriteString(user)
		if hasPassword {
			b.WriteString(":" + Mask)
		}
		b.WriteByte('@')
		p = p[at+1:]
	} else if strings.IndexByte(p, '@') >= 0 {
		p = strandedUserinfo.ReplaceAllLiteralString(p, ":"+Mask+"@")
	}
	base, query, hasQuery := strings.Cut(p, "?")
	b.WriteString(base)
	if !hasQuery {
		return b.String()
	}
	b.WriteByte('?')
	for i, pair := range strings.Split(query, "&") {
		if i > 0 {
			b.WriteByte('&')
		}
		key, _, hasValue := strings.Cut(pair, "=")
		if hasValue && isPasswordKey(unescape(key)) {
			pair = key + "=" + Mask
		}
		b.WriteString(pair)
	}
	return b.String()
}

// strandedUserinfo is a userinfo password cut off by an unencoded '/':
// greedy, to the last '@'.
var strandedUserinfo = regexp.MustCompile(`:.*@`)

func unescape(s string) string {
	if u, err := url.QueryUnescape(s); err == nil {
		return u
	}
	return s
}

func isPasswordKey(k string) bool {
	k = strings.ToLower(strings.TrimSpace(k))
	return k == "password" || k == "sslpassword"
}

// passwordKey finds a string that may hold a keyword/value password.
var passwordKey = regexp.MustCompile(`(?i)password\s*=`)

// looseKeyword masks what follows "password=" up to the next space, or a
// quoted value to its closing quote (to the end when it has none): for
// strings that are not keyword/value strings pgx could read.
var looseKeyword = regexp.MustCompile(`(?i)(password\s*=\s*)('(?:[^'\\]|\\.)*(?:'|$)|(?:[^\s\\]|\\.)*)`)

const spaces = " \t\n\r\v\f"

// redactKeywords reads s as pgx reads a keyword/value string and masks the
// password values; ok is false when s is not such a string.
func redactKeywords(s string) (string, bool) {
	var b strings.Builder
	for {
		trimmed := strings.TrimLeft(s, spaces)
		b.WriteString(s[:len(s)-len(trimmed)])
		s = trimmed
		if s == "" {
			return b.String(), true
		}
		eq := strings.IndexByte(s, '=')
		if eq < 0 {
			return "", false
		}
		key := s[:eq+1]
		b.WriteString(key)
		s = s[eq+1:]
		trimmed = strings.TrimLeft(s, spaces)
		b.WriteString(s[:len(s)-len(trimmed)])
		s = trimmed
		n, ok := valueLen(s)
		if !ok {
			return "", false
		}
		if isPasswordKey(strings.TrimSuffix(key, "=")) {
			b.WriteString(Mask)
		} else {
			b.WriteString(s[:n])
		}
		s = s[n:]
	}
}

// valueLen is the length of the keyword value s starts with: quoted, to
// its closing quote; otherwise to the first space. A backslash escapes the
// next byte.
func valueLen(s string) (int, bool) {
	if s == "" {
		return 0, true
	}
	quoted := s[0] == '\''
	i := 0
	if quoted {
		i = 1
	}
	for ; i < len(s); i++ {
		switch {
		case s[i] == '\\':
			i++
		case quoted && s[i] == '\'':
			return i + 1, true
		case !quoted && strings.IndexByte(spaces, s[i]) >= 0:
			return i, true
		}
	}
	if quoted {
		return 0, false
	}
	return len(s), true
}
