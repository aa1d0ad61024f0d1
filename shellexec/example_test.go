package shellexec_test

import (
	"context"
	"fmt"
	"os"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/codeparser"
	"github.com/polyloop/polyloop/memstore"
	"github.com/polyloop/polyloop/scriptmodel"
	"github.com/polyloop/polyloop/shellexec"
)

// A research-harness episode: the model acts with bash code blocks in a
// scratch directory, and ends the episode by printing the submit sentinel.
func Example() {
	dir, err := os.MkdirTemp("", "episode")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	shell, err := shellexec.New(shellexec.Options{Dir: dir, DoneSentinel: "POLYLOOP_SUBMIT"})
	if err != nil {
		panic(err)
	}
	model := scriptmodel.New(
		scriptmodel.Reply("```bash\necho 42 > answer.txt\n```"),
		scriptmodel.Reply("```bash\necho POLYLOOP_SUBMIT; cat answer.txt\n```"),
	)
	runner := &polyloop.Runner{Model: model, Parser: codeparser.New(codeparser.Options{}), Executor: shell, Store: memstore.New()}
	agent := polyloop.Agent{Name: "shell-episode", Limits: polyloop.Limits{MaxSteps: 5}}
	res, err := runner.Run(context.Background(), "episode-1", agent, polyloop.Task{Input: "Write the answer to answer.txt, then submit."})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.StopReason, res.Totals.Steps)
	// Output: completed 2
}
