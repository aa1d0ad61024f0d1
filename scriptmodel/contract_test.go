package scriptmodel_test

import (
	"errors"
	"testing"
	"time"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/polylooptest"
	"github.com/polyloop/polyloop/scriptmodel"
)

func TestConformance(t *testing.T) {
	polylooptest.TestModelClient(t, polylooptest.ModelClientHarness{
		New: func(testing.TB) polyloop.ModelClient { return scriptmodel.New(scriptmodel.Reply("hello")) },
		Failing: map[string]func(testing.TB) polyloop.ModelClient{
			"scripted_failure": func(testing.TB) polyloop.ModelClient { return scriptmodel.New(scriptmodel.Fail(errors.New("boom"))) },
			"fail_on_call": func(testing.TB) polyloop.ModelClient {
				return scriptmodel.NewWithOptions(scriptmodel.Options{FailOnCall: 1}, scriptmodel.Reply("x"))
			},
			"script_exhausted": func(testing.TB) polyloop.ModelClient { return scriptmodel.New() },
		},
		NewHanging: func(testing.TB) polyloop.ModelClient {
			return scriptmodel.New(scriptmodel.Turn{Text: "late", Delay: time.Hour})
		},
	})
}
