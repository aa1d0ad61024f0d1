package replaymodel_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/diag"
	"github.com/polyloop/polyloop/replaymodel"
)

func newClient(t *testing.T, m replaymodel.Match) *replaymodel.Client {
	t.Helper()
	c, err := replaymodel.New(recordedLog(), replaymodel.Options{Match: m})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestRepliesInStepOrder(t *testing.T) {
	t.Parallel()
	c := newClient(t, "")
	ctx := context.Background()
	for step, want := range map[int]polyloop.ModelReply{1: step1Reply, 2: step2Reply} {
		got, err := c.Complete(ctx, requestFor(step))
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("step %d: reply %+v, want %+v", step, got, want)
		}
	}
}

func TestReplyIsACopy(t *testing.T) {
	t.Parallel()
	c := newClient(t, "")
	first, err := c.Complete(context.Background(), requestFor(1))
	if err != nil {
		t.Fatal(err)
	}
	first.ToolCalls[0].Args[2] = 'X'
	*first.Usage.CostUSD = 99
	first.ToolCalls[0].Name = "changed"
	again, err := c.Complete(context.Background(), requestFor(1))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again, step1Reply) {
		t.Fatalf("changing a reply changed the client's log: second reply %+v", again)
	}
}

func TestRecordedFailureReplayed(t *testing.T) {
	t.Parallel()
	_, err := newClient(t, "").Complete(context.Background(), requestFor(3))
	var rf *replaymodel.RecordedFailureError
	if !errors.Is(err, replaymodel.ErrRecordedFailure) || !errors.As(err, &rf) {
		t.Fatalf("err = %v, want a RecordedFailureError", err)
	}
	if rf.Step != 3 || rf.RunID != recordedRun || rf.Failure.Message != step3Fail.Message {
		t.Errorf("RecordedFailureError = %+v", rf)
	}
	d := diag.From(err)
	if d.Fields["http_status"] != "429" || d.Fields["replay_step"] != "3" || d.Fields["replay_run_id"] != recordedRun {
		t.Errorf("diagnostic fields = %v, want the recorded http_status and the replayed step", d.Fields)
	}
	if step3Fail.Fields["replay_step"] != "" {
		t.Errorf("DiagFields modified the recorded diagnostic")
	}
}

func TestExhausted(t *testing.T) {
	t.Parallel()
	for _, step := range []int{0, 4, 100} {
		req := requestFor(3)
		req.Step = step
		_, err := newClient(t, "").Complete(context.Background(), req)
		if !errors.Is(err, replaymodel.ErrExhausted) {
			t.Errorf("step %d: err = %v, want ErrExhausted", step, err)
		}
	}
}

func TestOrphanedIntentIsExhausted(t *testing.T) {
	t.Parallel()
	log := recordedLog()
	log.Records = log.Records[:9] // ends with step 3's intent, no result
	c, err := replaymodel.New(log, replaymodel.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Complete(context.Background(), requestFor(3)); !errors.Is(err, replaymodel.ErrExhausted) {
		t.Fatalf("err = %v, want ErrExhausted", err)
	}
}

func TestCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	reply, err := newClient(t, "").Complete(ctx, requestFor(1))
	if !errors.Is(err, context.Canceled) || !reflect.DeepEqual(reply, polyloop.ModelReply{}) {
		t.Fatalf("Complete = %+v, %v; want no reply and context.Canceled", reply, err)
	}
}

func TestRequestNotModified(t *testing.T) {
	t.Parallel()
	req := requestFor(3)
	before := requestFor(3)
	_, _ = newClient(t, replaymodel.MatchExact).Complete(context.Background(), req)
	if !reflect.DeepEqual(req, before) {
		t.Fatal("Complete modified the request")
	}
}

func TestNewRefusesBadLogs(t *testing.T) {
	t.Parallel()
	good := recordedLog()
	dup := recordedLog()
	dup.Records[6].Body = &polyloop.ModelCallResult{Step: 1, CallID: "m1.2", Reply: &polyloop.ModelReply{}}
	bad := recordedLog()
	bad.Records[2].Body = &polyloop.ModelCallResult{Step: 1, CallID: "m1.1"}
	tests := []struct {
		name string
		log  polyloop.RunLog
		opts replaymodel.Options
		want error
	}{
		{"empty log", polyloop.RunLog{RunID: "x"}, replaymodel.Options{}, polyloop.ErrCorruptLog},
		{"no run_started", polyloop.RunLog{RunID: "x", Records: good.Records[1:]}, replaymodel.Options{}, polyloop.ErrCorruptLog},
		{"two results for a step", dup, replaymodel.Options{}, polyloop.ErrCorruptLog},
		{"result without reply or failure", bad, replaymodel.Options{}, polyloop.ErrCorruptLog},
		{"unknown match", good, replaymodel.Options{Match: "fuzzy"}, polyloop.ErrInvalidConfig},
	}
	for _, tt := range tests {
		if _, err := replaymodel.New(tt.log, tt.opts); !errors.Is(err, tt.want) {
			t.Errorf("%s: New err = %v, want %v", tt.name, err, tt.want)
		}
	}
}

func TestDescribe(t *testing.T) {
	t.Parallel()
	c := newClient(t, replaymodel.MatchExact).Describe()
	want := `{"run_id":"rec-1","snapshot_hash":"sha256:recorded","match":"exact","results":3}`
	if c.Name != "replaymodel" || string(c.Config) != want {
		t.Fatalf("Describe = %s %s, want replaymodel %s", c.Name, c.Config, want)
	}
	if d := newClient(t, "").Describe(); !strings.Contains(string(d.Config), `"match":"structure"`) {
		t.Errorf("default match not reported as structure: %s", d.Config)
	}
}
