package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/funcexec"
	"github.com/polyloop/polyloop/scriptmodel"
	"github.com/polyloop/polyloop/sqlitestore"
	"github.com/polyloop/polyloop/toolcallparser"
)

// A run suspended at an approval: ls says "awaiting approval", show and
// approve list the action with its arguments, approve --allow answers it
// (a second answer is refused), and the library's resume then runs it.
func TestApproveFromTheCommandLine(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "runs.db")
	st, err := sqlitestore.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	sent := 0
	exec := funcexec.New()
	funcexec.MustRegister(exec, "send", "send an email", polyloop.NeverReplay,
		func(ctx context.Context, args struct {
			To string `json:"to"`
		}) (string, error) {
			sent++
			return "sent to " + args.To, nil
		})
	agent := polyloop.Agent{Name: "mailer", Tools: exec.ToolSpecs(), Limits: polyloop.Limits{MaxSteps: 5}}
	agent.Tools[0].Approval = polyloop.ApprovalRequired
	runner := func() *polyloop.Runner {
		return &polyloop.Runner{Parser: toolcallparser.New(toolcallparser.Options{}), Executor: exec, Store: st,
			Model: scriptmodel.New(scriptmodel.Call("c1", "send", map[string]string{"to": "ana@example.com"}), scriptmodel.Reply("done"))}
	}
	res, err := runner().Run(ctx, "m1", agent, polyloop.Task{Input: "mail ana"})
	if err != nil || res.Suspended == nil {
		t.Fatalf("%+v, %v", res, err)
	}
	st.Close()
	cli := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := execute(append([]string{"--store", "sqlite:" + path}, args...), strings.NewReader(""), &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}
	if code, out, errOut := cli("ls"); code != exitOK || !strings.Contains(out, "awaiting approval") {
		t.Fatalf("ls: exit %d:\n%s%s", code, out, errOut)
	}
	if code, out, _ := cli("show", "m1"); code != exitOK || !strings.Contains(out, `a1 awaits approval: send {"to":"ana@example.com"}`) || !strings.Contains(out, "SUSPENDED") {
		t.Fatalf("show: exit %d:\n%s", code, out)
	}
	if code, out, _ := cli("approve", "m1"); code != exitOK || !strings.Contains(out, "a1 awaits approval") {
		t.Fatalf("approve without a decision lists: exit %d:\n%s", code, out)
	}
	if code, out, errOut := cli("approve", "m1", "--allow", "--note", "ok by ana", "--by", "ops"); code != exitOK || !strings.Contains(out, "allowed a1") {
		t.Fatalf("approve --allow: exit %d:\n%s%s", code, out, errOut)
	}
	if code, _, errOut := cli("approve", "m1", "a1", "--deny"); code != exitError || !strings.Contains(errOut, "already answered") {
		t.Fatalf("a second answer: exit %d: %s", code, errOut)
	}
	code, out, _ := cli("export", "m1")
	if code != exitOK {
		t.Fatalf("export: exit %d", code)
	}
	var decided map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["kind"] == "approval_decided" {
			decided = m
		}
	}
	if decided == nil || decided["allow"] != true || decided["by"] != "ops" || decided["note"] != "ok by ana" {
		t.Fatalf("the decision record: %v", decided)
	}
	st, err = sqlitestore.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	res, err = runner().Resume(ctx, "m1", agent)
	if err != nil || res.StopReason != polyloop.StopCompleted || sent != 1 {
		t.Fatalf("resume: %+v, %v; sent %d", res, err, sent)
	}
}
