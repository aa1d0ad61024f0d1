package feedback

import "testing"

func TestBoundedAndQuote(t *testing.T) {
	t.Parallel()
	tests := []struct {
		s       string
		n       int
		bounded string
		quoted  string
	}{
		{"abc", 3, "abc", `"abc"`},
		{"abcd", 3, "abc…", `"abc"…`},
		{"", 0, "", `""`},
		{"ééé", 3, "é…", `"é"…`}, // é is 2 bytes: the cut backs off to a rune start
		{"ééé", 4, "éé…", `"éé"…`},
		{"a\"b", 8, "a\"b", `"a\"b"`},
		{"\xff\xfe", 1, "\xff…", `"\xff"…`},
	}
	for _, tt := range tests {
		if got := Bounded(tt.s, tt.n); got != tt.bounded {
			t.Errorf("Bounded(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.bounded)
		}
		if got := Quote(tt.s, tt.n); got != tt.quoted {
			t.Errorf("Quote(%q, %d) = %s, want %s", tt.s, tt.n, got, tt.quoted)
		}
	}
}

func TestJSONKind(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]string{
		`{"a":1}`: "object", `[]`: "array", `"s"`: "string", `true`: "boolean", `false`: "boolean",
		`null`: "null", ``: "null", `-1`: "number", `0.5`: "number",
	} {
		if got := JSONKind([]byte(v)); got != want {
			t.Errorf("JSONKind(%s) = %s, want %s", v, got, want)
		}
	}
}
