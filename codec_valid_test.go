package polyloop

import (
	"encoding/json"
	"strings"
	"testing"
)

// validJSON says what json.Valid says, on every input.
func FuzzValidJSON(f *testing.F) {
	for _, s := range []string{
		``, ` `, `{}`, `[]`, `{"i":1,"note":"a"}`, ` {"a" : [1, 2.5e-3, -0, true, false, null, "x\u00e9\n"]} `,
		`{"a":}`, `{"a" 1}`, `{,}`, `[1,]`, `[,1]`, `01`, `-`, `1.`, `.5`, `1e`, `1e+`, `+1`, `"\x"`, `"\u12"`, `"\u12G4"`,
		"\"a\x01\"", "\"\xff\xfe\"", `tru`, `nul`, `falsey`, `{"a":1}x`, `{"a":1}{}`, `"`, `"\`, `{"a":"b",}`, `[[[[]]]]`,
		strings.Repeat("[", 10001) + strings.Repeat("]", 10001), strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
		`1E5`, `-1.5E-5`, `[1 2]`, `{"a":1 "b":2}`, "\t\n\r 1 \t", `"\/"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := validJSON(b), json.Valid(b); got != want {
			t.Fatalf("validJSON(%q) = %v, json.Valid = %v", b, got, want)
		}
	})
}
