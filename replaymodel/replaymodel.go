package replaymodel

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/polyloop/polyloop"
)

// Match chooses what of a request must agree with the recorded run (see the
// package documentation).
type Match string

// The match levels.
const (
	MatchStructure Match = "structure"
	MatchExact     Match = "exact"
	MatchSteps     Match = "steps"
)

// Options configure a Client. The zero value matches the structure.
type Options struct {
	// Match is what must agree (default MatchStructure).
	Match Match
}

// Client answers from a recorded run. It keeps no state between calls and
// is safe for concurrent use.
type Client struct {
	log   polyloop.RunLog
	match Match
	// results maps a step to the index in log.Records of its result.
	results map[int]int
	hash    string
}

// New returns a client replaying log, which must start with RunStarted and
// hold at most one model result per step, with steps increasing; a log that
// breaks that gives an error for which errors.Is(err, polyloop.ErrCorruptLog)
// holds. The client keeps the log and never modifies it.
func New(log polyloop.RunLog, opts Options) (*Client, error) {
	switch opts.Match {
	case "":
		opts.Match = MatchStructure
	case MatchStructure, MatchExact, MatchSteps:
	default:
		return nil, fmt.Errorf("%w: replaymodel: unknown match %q", polyloop.ErrInvalidConfig, opts.Match)
	}
	started := log.Started()
	if started == nil {
		return nil, &polyloop.CorruptLogError{RunID: log.RunID, Seq: -1, Reason: "replaymodel: the log does not start with run_started"}
	}
	c := &Client{
		log:     polyloop.RunLog{RunID: started.RunID, Records: append([]polyloop.Record(nil), log.Records...)},
		match:   opts.Match,
		results: map[int]int{},
	}
	_, c.hash = c.log.Snapshot()
	last := 0
	for i, r := range c.log.Records {
		res, ok := r.Body.(*polyloop.ModelCallResult)
		if !ok {
			continue
		}
		if err := res.Validate(); err != nil || res.Step <= last {
			return nil, &polyloop.CorruptLogError{RunID: c.log.RunID, Seq: r.Seq, Kind: r.Kind(),
				Reason: fmt.Sprintf("replaymodel: model result for step %d after step %d, or invalid (%v)", res.Step, last, err)}
		}
		last = res.Step
		c.results[res.Step] = i
	}
	return c, nil
}

// Describe implements polyloop.Describer: the recorded run, its snapshot
// hash and the match level enter the replay run's snapshot.
func (c *Client) Describe() polyloop.Component {
	raw, err := json.Marshal(struct {
		RunID        string `json:"run_id"`
		SnapshotHash string `json:"snapshot_hash"`
		Match        Match  `json:"match"`
		Results      int    `json:"results"`
	}{c.log.RunID, c.hash, c.match, len(c.results)})
	if err != nil { // cannot happen: strings and an int
		panic("replaymodel: encoding config: " + err.Error())
	}
	return polyloop.Component{Name: "replaymodel", Config: raw}
}

// KnowsCost implements polyloop.CostReporter: the replayed costs are known
// when every recorded reply has one.
func (c *Client) KnowsCost(polyloop.ModelParams) bool {
	for _, i := range c.results {
		res := c.log.Records[i].Body.(*polyloop.ModelCallResult)
		if res.Reply != nil && res.Reply.Usage.CostUSD == nil {
			return false
		}
	}
	return len(c.results) > 0
}

// Complete implements polyloop.ModelClient: it returns a copy of the
// recorded reply of req.Step, or the recorded failure as an error, after
// checking req against the recorded run. It does not modify or keep req.
func (c *Client) Complete(ctx context.Context, req polyloop.ModelRequest) (polyloop.ModelReply, error) {
	if err := ctx.Err(); err != nil {
		return polyloop.ModelReply{}, err
	}
	i, ok := c.results[req.Step]
	if !ok {
		return polyloop.ModelReply{}, fmt.Errorf("%w: recorded run %q has no model result for step %d (it has %d)",
			ErrExhausted, c.log.RunID, req.Step, len(c.results))
	}
	if err := c.check(req, i); err != nil {
		return polyloop.ModelReply{}, err
	}
	res := c.log.Records[i].Body.(*polyloop.ModelCallResult)
	if res.Failure != nil {
		return polyloop.ModelReply{}, &RecordedFailureError{RunID: c.log.RunID, Step: req.Step, Failure: *res.Failure}
	}
	return res.Reply.Clone(), nil
}

// check compares req with the recorded run up to the result at index i.
func (c *Client) check(req polyloop.ModelRequest, i int) error {
	if c.match == MatchSteps {
		return nil
	}
	prefix := polyloop.RunLog{RunID: c.log.RunID, Records: c.log.Records[:i]}
	d := compareMessages(c.match, polyloop.History(prefix), req.Messages)
	if d == nil && c.match == MatchExact {
		snap, _ := prefix.Snapshot()
		d = compareSpecs(snap, req)
	}
	if d != nil {
		d.RunID, d.Step = c.log.RunID, req.Step
		return d
	}
	return nil
}
