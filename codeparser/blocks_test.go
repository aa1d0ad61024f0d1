package codeparser_test

import (
	"reflect"
	"testing"

	"github.com/polyloop/polyloop/codeparser"
)

func TestBlocks(t *testing.T) {
	t.Parallel()
	text := "intro\n```Go run\nfmt.Println()\n```\n~~~\nraw\n"
	got := codeparser.Blocks(text)
	want := []codeparser.Block{
		{Info: "Go run", Lang: "go", Code: "fmt.Println()", Line: 2, Start: 6, End: 33, Closed: true},
		{Info: "", Lang: "", Code: "raw", Line: 5, Start: 34, End: len(text), Closed: false},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Blocks =\n%#v\nwant\n%#v", got, want)
	}
	if s := text[got[0].Start:got[0].End]; s != "```Go run\nfmt.Println()\n```" {
		t.Errorf("first block spans %q", s)
	}
}

func TestBlocksEdgeCases(t *testing.T) {
	t.Parallel()
	tests := []struct {
		text  string
		codes []string
	}{
		{"", nil},
		{"```", []string{""}},
		{"```\n```", []string{""}},
		{"``\nx\n``", nil},
		{"```a\n~~~\n```", []string{"~~~"}},
		{"```a\n```b\n```", []string{"```b"}},
		{"```a\n``` \n", []string{""}},
		{"   ```\nx\n   ```", []string{"x"}},
	}
	for _, tt := range tests {
		var codes []string
		for _, b := range codeparser.Blocks(tt.text) {
			codes = append(codes, b.Code)
		}
		if !reflect.DeepEqual(codes, tt.codes) {
			t.Errorf("Blocks(%q) codes = %q, want %q", tt.text, codes, tt.codes)
		}
	}
}
