package main

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BenchmarkSweepSampleEpoch runs the issue-36 sweep from the CLI, scaled
// down: POLYLOOP_BENCH_SAMPLES samples (default 100) × 2 epochs, at
// concurrency 32, an OpenAI-compatible mock answering after
// POLYLOOP_BENCH_LATENCY (default 20ms) — a call of the MCP server's add
// tool, then the sum — and exact-match scoring, on a fresh SQLite file. It
// reports, per sample-epoch: the CPU of the polyloop process and its
// children (the MCP server) from wait4's rusage (cpu-µs/sample-epoch;
// goal ≤ 2,000), the SQLite file's size after the sweep (file-B; goal ≤
// 1,600), the bytes of the records and snapshots tables' data
// (records-B), the wall time over the latency-bound ideal, and the
// largest ru_maxrss of the CLI or the MCP server (an upper bound: exec
// may fold the test binary's own high-water mark into it). With
// POLYLOOP_BENCH_CPUPROFILE (POLYLOOP_BENCH_MEMPROFILE) set, the CLI
// writes its CPU (memory) profile there;
// with POLYLOOP_BENCH_KEEP, the SQLite file is copied there.
func BenchmarkSweepSampleEpoch(b *testing.B) {
	samples := envInt("POLYLOOP_BENCH_SAMPLES", 100)
	latency := 20 * time.Millisecond
	if v := os.Getenv("POLYLOOP_BENCH_LATENCY"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			b.Fatal(err)
		}
		latency = d
	}
	const epochs, concurrency = 2, 32
	bin, err := exec.LookPath("polyloop")
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(addModel(latency))
	defer srv.Close()
	var cpu, wall time.Duration
	var file, records, maxRSS int64
	for b.Loop() {
		dir := b.TempDir()
		write := func(name, content string) {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		write("adder.yaml", fmt.Sprintf("name: adder\nmodel: {provider: openai, model: m, base_url: %q}\ntools:\n  mcp:\n    - {name: calc, command: mcpadd}\nlimits: {max_steps: 4}\n", srv.URL+"/v1/"))
		write("sweep.yaml", fmt.Sprintf("name: bench\nagents: [adder.yaml]\ntasks: tasks.csv\nepochs: %d\nconcurrency: %d\nscorers:\n  - kind: exact\n", epochs, concurrency))
		var tasks strings.Builder
		tasks.WriteString("id,input,target\n")
		for i := range samples {
			fmt.Fprintf(&tasks, "s%d,What is %d + %d?,%d\n", i, i, 2*i+1, 3*i+1)
		}
		write("tasks.csv", tasks.String())
		db := filepath.Join(dir, "store.db")
		args := []string{"sweep", "sweep.yaml"}
		if p := os.Getenv("POLYLOOP_BENCH_CPUPROFILE"); p != "" {
			args = append([]string{"--cpuprofile", p}, args...)
		}
		if p := os.Getenv("POLYLOOP_BENCH_MEMPROFILE"); p != "" {
			args = append([]string{"--memprofile", p}, args...)
		}
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "POLYLOOP_STORE=sqlite:"+db, "NO_COLOR=1")
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		start := time.Now()
		if err := cmd.Run(); err != nil {
			b.Fatalf("polyloop sweep: %v\n%s", err, out.String())
		}
		wall += time.Since(start)
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		cpu += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		maxRSS = max(maxRSS, ru.Maxrss)
		st, err := os.Stat(db)
		if err != nil {
			b.Fatal(err)
		}
		file += st.Size()
		if keep := os.Getenv("POLYLOOP_BENCH_KEEP"); keep != "" {
			data, err := os.ReadFile(db)
			if err != nil {
				b.Fatal(err)
			}
			os.WriteFile(keep, data, 0o644)
		}
		records += tableBytes(b, db)
	}
	n := float64(b.N * samples * epochs)
	ideal := time.Duration((samples*epochs+concurrency-1)/concurrency) * 2 * latency
	b.ReportMetric(float64(cpu.Microseconds())/n, "cpu-µs/sample-epoch")
	b.ReportMetric(float64(file)/n, "file-B/sample-epoch")
	b.ReportMetric(float64(records)/n, "records-B/sample-epoch")
	b.ReportMetric(wall.Seconds()/float64(b.N)/ideal.Seconds(), "x-ideal")
	b.ReportMetric(float64(maxRSS)/1e3, "maxrss-MB")
}

// tableBytes is the length of the data the records and snapshots tables
// hold (with each record's run id, kind and checksum: its row's content).
func tableBytes(b *testing.B, path string) int64 {
	db, err := sql.Open("sqlite", path)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	var recs, snaps int64
	if err := db.QueryRow(`SELECT coalesce(sum(length(data)), 0) FROM records`).Scan(&recs); err != nil {
		b.Fatal(err)
	}
	if err := db.QueryRow(`SELECT coalesce(sum(length(data)), 0) FROM snapshots`).Scan(&snaps); err != nil {
		b.Fatal(err)
	}
	return recs + snaps
}

func envInt(k string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(k)); err == nil && v > 0 {
		return v
	}
	return def
}

// addModel is an OpenAI-compatible chat completions mock: after latency,
// it answers a conversation without a tool result with a call of add on
// the two integers of the user's question, and one with a tool result with
// that result as the answer.
func addModel(latency time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct {
				Role    string `json:"role"`
				Content any    `json:"content"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		time.Sleep(latency)
		var msg map[string]any
		var question, result string
		for _, m := range req.Messages {
			text := contentText(m.Content)
			switch m.Role {
			case "user":
				question = text
			case "tool":
				result = text
			}
		}
		if result != "" {
			msg = map[string]any{"role": "assistant", "content": strings.TrimSpace(result)}
		} else {
			var a, bb int
			fmt.Sscanf(question, "What is %d + %d?", &a, &bb)
			msg = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
				"id": "call_1", "type": "function", "function": map[string]any{"name": "add", "arguments": fmt.Sprintf(`{"a":%d,"b":%d}`, a, bb)}}}}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": "stop"}},
			"usage":   map[string]any{"prompt_tokens": 60, "completion_tokens": 12, "total_tokens": 72}})
	})
}

// contentText is a message's text: a string, or the text parts of a list.
func contentText(c any) string {
	switch v := c.(type) {
	case string:
		return v
	case []any:
		var sb strings.Builder
		for _, p := range v {
			if m, ok := p.(map[string]any); ok {
				if t, ok := m["text"].(string); ok {
					sb.WriteString(t)
				}
			}
		}
		return sb.String()
	}
	return ""
}
