package mcpexec_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/mcpexec"
)

// newInMemory connects an executor to a fresh in-process test server.
func newInMemory(t *testing.T, st *serverState, opts mcpexec.Options) *mcpexec.Executor {
	t.Helper()
	ct, srvT := mcp.NewInMemoryTransports()
	ss, err := newTestServer(st).Connect(context.Background(), srvT, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	opts.Transport = ct
	if opts.Identity == "" {
		opts.Identity = "in-memory test server"
	}
	e, err := mcpexec.New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e
}

// newSubprocess starts the test binary as a stdio server.
func newSubprocess(t *testing.T, mode string, opts mcpexec.Options) *mcpexec.Executor {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	opts.Command = []string{exe}
	opts.Env = []string{serverModeEnv + "=" + mode}
	e, err := mcpexec.New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func call(tool, args string) polyloop.Action {
	return polyloop.Action{Tool: tool, Args: json.RawMessage(args), CallID: "c1"}
}

func execute(t *testing.T, e *mcpexec.Executor, a polyloop.Action) polyloop.ActionOutcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := e.Execute(ctx, a)
	if err != nil {
		t.Fatalf("Execute(%s): %v", a.Tool, err)
	}
	return out
}

// info calls the info tool and returns the server's pid and call count.
func info(t *testing.T, e *mcpexec.Executor) (pid, calls int, roots bool) {
	t.Helper()
	out := execute(t, e, call("info", `{}`))
	fields := map[string]string{}
	for _, f := range strings.Fields(out.Observation) {
		k, v, _ := strings.Cut(f, "=")
		fields[k] = v
	}
	pid, _ = strconv.Atoi(fields["pid"])
	calls, _ = strconv.Atoi(fields["calls"])
	return pid, calls, fields["roots"] == "true"
}

func TestToolSpecsFromToolsList(t *testing.T) {
	t.Parallel()
	e := newInMemory(t, &serverState{}, mcpexec.Options{})
	want := map[string]polyloop.ReplayPolicy{
		"echo": polyloop.ReplaySafe, "sum": polyloop.ReplaySafe, "write": polyloop.NeverReplay,
		"picture": polyloop.NeverReplay, "slow": polyloop.NeverReplay,
	}
	specs := e.ToolSpecs()
	for _, s := range specs {
		if p, ok := want[s.Name]; ok && s.Replay != p {
			t.Errorf("%s: replay %q, want %q", s.Name, s.Replay, p)
		}
		if s.Name == "echo" {
			if s.Description != "Echoes text." || !strings.Contains(string(s.Parameters), `"text"`) || !json.Valid(s.Parameters) {
				t.Errorf("echo spec = %+v / %s", s, s.Parameters)
			}
		}
		delete(want, s.Name)
	}
	if len(want) != 0 {
		t.Errorf("tools missing from ToolSpecs: %v", want)
	}
}

func TestReplayOverrideIsWhatToolSpecsReport(t *testing.T) {
	t.Parallel()
	e := newInMemory(t, &serverState{}, mcpexec.Options{
		Tools:  []string{"echo", "write"},
		Replay: map[string]polyloop.ReplayPolicy{"echo": polyloop.NeverReplay, "write": polyloop.ReplaySafe},
	})
	specs := e.ToolSpecs()
	if len(specs) != 2 || specs[0].Name != "echo" || specs[0].Replay != polyloop.NeverReplay ||
		specs[1].Name != "write" || specs[1].Replay != polyloop.ReplaySafe {
		t.Errorf("specs = %+v", specs)
	}
	if out := execute(t, e, call("sum", `{"A":1,"B":2}`)); out.Status != polyloop.NotExecuted {
		t.Errorf("a tool left out by Options.Tools ran: %+v", out)
	}
}

func TestRefusedActionsNeverReachTheServer(t *testing.T) {
	t.Parallel()
	st := &serverState{}
	e := newInMemory(t, st, mcpexec.Options{})
	for name, a := range map[string]polyloop.Action{
		"unknown tool":     call("delete_everything", `{}`),
		"missing required": call("echo", `{}`),
		"no arguments":     {Tool: "echo"},
		"wrong type":       call("echo", `{"text":5}`),
		"unknown property": call("echo", `{"text":"a","loud":true}`),
		"not an object":    call("echo", `["a"]`),
		"malformed":        call("echo", `{"text":`),
		"code action":      {Code: "ls", Lang: "bash"},
	} {
		out := execute(t, e, a)
		if out.Status != polyloop.NotExecuted || out.Observation == "" {
			t.Errorf("%s: outcome %+v, want not_executed with a reason", name, out)
		}
	}
	if n := st.calls.Load(); n != 0 {
		t.Errorf("the server received %d tool calls, want 0", n)
	}
}

func TestResults(t *testing.T) {
	t.Parallel()
	e := newInMemory(t, &serverState{}, mcpexec.Options{})
	cases := []struct {
		name   string
		action polyloop.Action
		want   string
	}{
		{"text", call("echo", `{"text":"ab","times":2}`), "abab"},
		{"isError", call("write", `{"Fail":true}`), "disk full"},
		{"structured once", call("sum", `{"A":2,"B":3}`), `{"sum":5}`},
		{"structured content the text carries", call("readfile", `{}`), "line one\nline two"},
		{"structured content with more", call("stat", `{}`), "a.txt\n" + `{"name":"a.txt","size":42}`},
		{"binary described", call("picture", `{}`), "a red dot:\n[image: image/png, 1234 bytes]\n[audio: audio/wav, 10 bytes]\n" +
			"[resource file:///blob: application/zip, 7 bytes]\n[resource link: doc <file:///doc.txt>, 99 bytes]"},
	}
	for _, tc := range cases {
		out := execute(t, e, tc.action)
		want := polyloop.ActionOutcome{Status: polyloop.Executed, Observation: tc.want}
		if out != want {
			t.Errorf("%s: outcome %+v, want %+v", tc.name, out, want)
		}
	}
}

func TestJSONRPCErrors(t *testing.T) {
	t.Parallel()
	st := &serverState{}
	e := newInMemory(t, st, mcpexec.Options{})
	for tool, want := range map[string]polyloop.ActionStatus{
		"rpc_invalid_params":  polyloop.NotExecuted,
		"rpc_invalid_request": polyloop.EnvError,
		"rpc_plain_error":     polyloop.Executed,
	} {
		if out := execute(t, e, call(tool, `{}`)); out.Status != want || out.Observation == "" {
			t.Errorf("%s: outcome %+v, want %q", tool, out, want)
		}
	}
	if n := st.calls.Load(); n != 3 {
		t.Errorf("the server received %d calls, want 3", n)
	}
}

func TestCancellationIsSentAndReturned(t *testing.T) {
	t.Parallel()
	st := &serverState{started: make(chan struct{}), cancelled: make(chan struct{})}
	e := newInMemory(t, st, mcpexec.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-st.started; cancel() }()
	_, err := e.Execute(ctx, call("slow", `{}`))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	select {
	case <-st.cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the server never saw the cancellation")
	}
	if _, err := e.Execute(ctx, call("echo", `{"text":"x"}`)); !errors.Is(err, context.Canceled) {
		t.Errorf("done context: err = %v, want context.Canceled", err)
	}
}

func TestStdioSubprocess(t *testing.T) {
	t.Parallel()
	e := newSubprocess(t, "serve", mcpexec.Options{})
	defer e.Close()
	if out := execute(t, e, call("echo", `{"text":"over stdio"}`)); out.Status != polyloop.Executed || out.Observation != "over stdio" {
		t.Errorf("echo: %+v", out)
	}
	execute(t, e, call("nope", `{}`))
	execute(t, e, call("echo", `{"text":1}`))
	pid, calls, _ := info(t, e)
	if calls != 2 { // echo and info itself
		t.Errorf("the server received %d calls, want 2 (refused calls must not reach it)", calls)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitDead(t, pid)
	if out := execute(t, e, call("echo", `{"text":"anyone?"}`)); out.Status != polyloop.EnvError {
		t.Fatalf("after the server was killed: %+v, want env_error", out)
	}
}

// waitDead waits until the process pid has died (it stays a zombie until
// the transport reaps it).
func waitDead(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return
		}
		if i := strings.LastIndexByte(string(stat), ')'); i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d did not die", pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestServerKilledMidCall(t *testing.T) {
	t.Parallel()
	e := newSubprocess(t, "serve", mcpexec.Options{})
	defer e.Close()
	pid, _, _ := info(t, e)
	type result struct {
		out polyloop.ActionOutcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := e.Execute(context.Background(), call("slow", `{}`))
		done <- result{out, err}
	}()
	time.Sleep(200 * time.Millisecond) // let the call reach the server
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r.err != nil || r.out.Status != polyloop.EnvError {
			t.Errorf("outcome %+v, err %v; want env_error", r.out, r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the call did not end after the server died")
	}
}

func TestCloseDoesNotHang(t *testing.T) {
	t.Parallel()
	e := newSubprocess(t, "stubborn", mcpexec.Options{TerminateTimeout: 100 * time.Millisecond})
	pid, _, _ := info(t, e)
	start := time.Now()
	_ = e.Close() // the killed server's exit status is the error
	if elapsed := time.Since(start); elapsed > 3*time.Second {
		t.Errorf("Close took %v", elapsed)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("the server process %d is still there after Close (kill 0: %v)", pid, err)
	}
}

func TestStreamableHTTP(t *testing.T) {
	t.Parallel()
	st := &serverState{}
	srv := newTestServer(st)
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer hs.Close()
	url := strings.Replace(hs.URL, "http://", "http://user:pw@", 1) + "/mcp?token=s3cret"
	e, err := mcpexec.New(context.Background(), mcpexec.Options{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if out := execute(t, e, call("echo", `{"text":"over http"}`)); out.Status != polyloop.Executed || out.Observation != "over http" {
		t.Errorf("echo: %+v", out)
	}
	d := e.Describe()
	if strings.Contains(string(d.Config), "s3cret") || strings.Contains(string(d.Config), "pw") ||
		!strings.Contains(string(d.Config), "/mcp") || !strings.Contains(string(d.Config), "polyloop-test-server") {
		t.Errorf("Describe = %s", d.Config)
	}
	if want := `"transport":"streamable_http","server":"` + hs.URL + `/mcp"`; !strings.Contains(string(d.Config), want) {
		t.Errorf("Describe = %s, want it to hold %s", d.Config, want)
	}
	hs.CloseClientConnections()
	hs.Close()
	out := execute(t, e, call("echo", `{"text":"gone?"}`))
	if out.Status != polyloop.EnvError {
		t.Errorf("after the server closed: %+v, want env_error", out)
	}
}

// TestHTTPHeaders checks that Options.Headers reach the server on every
// request (initialize, tools/list, the call) and stay out of Describe.
func TestHTTPHeaders(t *testing.T) {
	t.Parallel()
	const token = "Bearer t0k3n-9f8e7d6c5b4a3928"
	var mu sync.Mutex
	var seen []string
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return newTestServer(&serverState{}) }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		mcpHandler.ServeHTTP(w, r)
	}))
	defer hs.Close()
	e, err := mcpexec.New(context.Background(), mcpexec.Options{URL: hs.URL + "/mcp",
		Headers: http.Header{"Authorization": {token}}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if out := execute(t, e, call("echo", `{"text":"with a header"}`)); out.Status != polyloop.Executed {
		t.Errorf("echo: %+v", out)
	}
	mu.Lock()
	if len(seen) < 3 {
		t.Errorf("%d requests reached the server, want at least 3", len(seen))
	}
	for i, got := range seen {
		if got != token {
			t.Errorf("request %d has Authorization %q, want the configured header", i, got)
		}
	}
	mu.Unlock()
	if d := e.Describe(); strings.Contains(string(d.Config), "t0k3n") || strings.Contains(string(d.Config), "Authorization") {
		t.Errorf("Describe holds the header: %s", d.Config)
	}
	if _, err := mcpexec.New(context.Background(), mcpexec.Options{Command: []string{"srv"},
		Headers: http.Header{"Authorization": {token}}}); err == nil {
		t.Error("headers accepted for a stdio server")
	}
}

func TestRoots(t *testing.T) {
	t.Parallel()
	e := newInMemory(t, &serverState{}, mcpexec.Options{})
	if _, _, roots := info(t, e); roots {
		t.Error("roots advertised without being configured")
	}
	e = newInMemory(t, &serverState{}, mcpexec.Options{Roots: []string{"file:///srv/project"}})
	if _, _, roots := info(t, e); !roots {
		t.Error("configured roots not advertised")
	}
}

func TestOptionsAreChecked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	if _, err := mcpexec.New(ctx, mcpexec.Options{}); err == nil {
		t.Error("no server accepted")
	}
	ct, _ := mcp.NewInMemoryTransports()
	if _, err := mcpexec.New(ctx, mcpexec.Options{URL: "http://x", Transport: ct}); err == nil {
		t.Error("two servers accepted")
	}
	if _, err := mcpexec.New(ctx, mcpexec.Options{Transport: ct, Replay: map[string]polyloop.ReplayPolicy{"echo": "often"}}); err == nil {
		t.Error("unknown replay policy accepted")
	}
	for name, opts := range map[string]mcpexec.Options{
		"replay for a missing tool": {Replay: map[string]polyloop.ReplayPolicy{"nope": polyloop.ReplaySafe}},
		"a missing tool exposed":    {Tools: []string{"echo", "nope"}},
	} {
		ct, srvT := mcp.NewInMemoryTransports()
		ss, err := newTestServer(&serverState{}).Connect(ctx, srvT, nil)
		if err != nil {
			t.Fatal(err)
		}
		opts.Transport = ct
		if e, err := mcpexec.New(ctx, opts); err == nil {
			e.Close()
			t.Errorf("%s: accepted", name)
		}
		ss.Close()
	}
}

func TestDescribeIsStable(t *testing.T) {
	t.Parallel()
	a := newInMemory(t, &serverState{}, mcpexec.Options{Identity: "files-server"})
	b := newInMemory(t, &serverState{}, mcpexec.Options{Identity: "files-server"})
	da, db := a.Describe(), b.Describe()
	if da.Name != "mcpexec" || string(da.Config) != string(db.Config) {
		t.Errorf("Describe differs between equal servers:\n%s\n%s", da.Config, db.Config)
	}
	if !strings.Contains(string(da.Config), `"server":"files-server"`) || !strings.Contains(string(da.Config), `"server_version":"v0.0.1"`) {
		t.Errorf("Describe = %s", da.Config)
	}
}

func TestPrefix(t *testing.T) {
	t.Parallel()
	st := &serverState{}
	e := newInMemory(t, st, mcpexec.Options{Prefix: "srv_", Tools: []string{"echo", "sum"},
		Replay: map[string]polyloop.ReplayPolicy{"sum": polyloop.NeverReplay}})
	var names []string
	for _, s := range e.ToolSpecs() {
		names = append(names, s.Name+"="+string(s.Replay))
	}
	if got := strings.Join(names, " "); got != "srv_echo=replay_safe srv_sum=never_replay" {
		t.Errorf("ToolSpecs = %s", got)
	}
	if out := execute(t, e, call("srv_echo", `{"text":"hi"}`)); out.Status != polyloop.Executed || out.Observation != "hi" {
		t.Errorf("srv_echo: %+v", out)
	}
	if out := execute(t, e, call("echo", `{"text":"hi"}`)); out.Status != polyloop.NotExecuted || !strings.Contains(out.Observation, "srv_echo") {
		t.Errorf("the unprefixed name: %+v, want not_executed naming srv_echo", out)
	}
	if d := string(e.Describe().Config); !strings.Contains(d, `"prefix":"srv_"`) || !strings.Contains(d, `"tools":["srv_echo","srv_sum"]`) {
		t.Errorf("Describe = %s", d)
	}
	if _, err := mcpexec.New(context.Background(), mcpexec.Options{Command: []string{"true"}, Prefix: "a b"}); err == nil {
		t.Error("a prefix with a space was accepted")
	}
}

// TestStartFailureShowsStderr: a server that dies at start is reported with
// the end of what it wrote to stderr, not only the SDK's EOF.
func TestStartFailureShowsStderr(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	_, err = mcpexec.New(context.Background(), mcpexec.Options{Command: []string{exe}, Env: []string{serverModeEnv + "=dies"}})
	var start *mcpexec.StartError
	if !errors.As(err, &start) {
		t.Fatalf("err = %v, want a *StartError", err)
	}
	if !strings.HasSuffix(start.Stderr, "fatal: cannot open the database /nonexistent/db.sqlite") {
		t.Errorf("Stderr = %q, want it to end with the server's last line", start.Stderr)
	}
	if len(start.Stderr) > mcpexec.StderrTail {
		t.Errorf("Stderr holds %d bytes, more than StderrTail", len(start.Stderr))
	}
	if !strings.Contains(err.Error(), "cannot open the database") {
		t.Errorf("the message does not show the server's stderr: %v", err)
	}
}

func TestStartIsCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := mcpexec.New(ctx, mcpexec.Options{Command: []string{"sleep", "60"}})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

func TestDescribeNamesTheTransport(t *testing.T) {
	t.Parallel()
	e := newSubprocess(t, "serve", mcpexec.Options{})
	defer e.Close()
	exe, _ := os.Executable()
	var d struct{ Transport, Server string }
	if err := json.Unmarshal(e.Describe().Config, &d); err != nil {
		t.Fatal(err)
	}
	if d.Transport != "stdio" || d.Server != exe {
		t.Errorf("Describe = %+v, want transport stdio and server %s", d, exe)
	}
}
