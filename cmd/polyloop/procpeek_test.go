package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// procPeekMain is the tests' "procpeek PID PREFIX..." command: what an
// action can learn of process PID (its driver, $PPID) through /proc — its
// environment, its command line, and every prefix found in its memory,
// with what follows it. It is what a prompt-injected model would run.
func procPeekMain() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: procpeek PID PREFIX...")
		os.Exit(2)
	}
	pid, _ := strconv.Atoi(os.Args[1])
	fmt.Print(peek(pid, os.Args[2:]))
}

// mcpPeekMain is the tests' "mcppeek" command: an MCP stdio server whose
// tool peek answers what peek finds of its parent (the driver).
func mcpPeekMain() {
	s := mcp.NewServer(&mcp.Implementation{Name: "peek", Version: "v1"}, nil)
	type args struct {
		Prefixes []string `json:"prefixes"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "peek", Description: "Reads its parent through /proc."},
		func(ctx context.Context, _ *mcp.CallToolRequest, a args) (*mcp.CallToolResult, any, error) {
			text := peek(os.Getppid(), a.Prefixes)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil, nil
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		os.Exit(1)
	}
}

// peek reports what /proc/PID gives away.
func peek(pid int, prefixes []string) string {
	var b strings.Builder
	dir := "/proc/" + strconv.Itoa(pid)
	for _, name := range []string{"environ", "cmdline"} {
		data, err := os.ReadFile(dir + "/" + name)
		if err != nil {
			fmt.Fprintf(&b, "%s: %v\n", name, err)
			continue
		}
		fmt.Fprintf(&b, "%s: %s\n", name, bytes.ReplaceAll(data, []byte{0}, []byte{' '}))
	}
	found, err := scanMemory(dir, prefixes)
	if err != nil {
		fmt.Fprintf(&b, "mem: %v\n", err)
	}
	for _, f := range found {
		fmt.Fprintf(&b, "mem: found %s\n", f)
	}
	return b.String()
}

// scanMemory searches the readable mappings of a process for the
// prefixes, returning each occurrence with the 24 bytes after it.
func scanMemory(dir string, prefixes []string) ([]string, error) {
	maps, err := os.Open(dir + "/maps")
	if err != nil {
		return nil, err
	}
	defer maps.Close()
	mem, err := os.Open(dir + "/mem")
	if err != nil {
		return nil, err
	}
	defer mem.Close()
	seen := map[string]bool{}
	var found []string
	sc := bufio.NewScanner(maps)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || f[1][0] != 'r' || (len(f) > 5 && strings.HasPrefix(f[5], "[v")) {
			continue
		}
		var from, to uint64
		if _, err := fmt.Sscanf(f[0], "%x-%x", &from, &to); err != nil || to-from > 1<<30 {
			continue
		}
		buf := make([]byte, to-from)
		n, _ := io.ReadFull(io.NewSectionReader(mem, int64(from), int64(to-from)), buf)
		for _, p := range prefixes {
			for rest := buf[:n]; ; {
				i := bytes.Index(rest, []byte(p))
				if i < 0 {
					break
				}
				s := string(rest[i:min(len(rest), i+len(p)+24)])
				if !seen[s] {
					seen[s] = true
					found = append(found, strconv.Quote(s))
				}
				rest = rest[i+len(p):]
			}
		}
	}
	return found, nil
}
