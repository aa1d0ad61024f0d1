package agentfile

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// largestFiles writes agent files just under MaxFileSize: many scripted
// turns (a large real file), and one list of one-digit integers (the most
// YAML nodes per byte).
func largestFiles(b *testing.B) map[string]string {
	dir := b.TempDir()
	head := "name: big\nmodel:\n  provider: script\n  script:\n"
	var turns strings.Builder
	turns.WriteString(head)
	for i := 0; ; i++ {
		line := fmt.Sprintf("    - {tool: bash, args: {command: \"echo %d\"}}\n", i)
		if turns.Len()+len(line) > MaxFileSize {
			break
		}
		turns.WriteString(line)
	}
	pre := head + "    - tool: t\n      args: {x: ["
	n := (MaxFileSize - len(pre) - 4) / 2
	list := pre + strings.Repeat("1,", n-1) + "1]}\n"
	files := map[string]string{}
	for name, src := range map[string]string{"turns": turns.String(), "dense-list": list} {
		p := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			b.Fatal(err)
		}
		files[name] = p
	}
	return files
}

// BenchmarkCheckLargestFile checks the largest agent files accepted and
// reports the bytes allocated per byte of input.
func BenchmarkCheckLargestFile(b *testing.B) {
	for name, p := range largestFiles(b) {
		b.Run(name, func(b *testing.B) {
			st, _ := os.Stat(p)
			b.SetBytes(st.Size())
			b.ReportAllocs()
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			for b.Loop() {
				if _, err := Check(p); err != nil {
					b.Fatal(err)
				}
			}
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/float64(b.N)/float64(st.Size()), "alloc-B/input-B")
		})
	}
}
