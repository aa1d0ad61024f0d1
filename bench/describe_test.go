package bench

import (
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/scriptmodel"
)

// plainModel has no Describe: the snapshot names it by its Go type.
type plainModel struct{ polyloop.ModelClient }

// TestWrappersKeepTheModelsIdentity: the model wrappers of the resume
// measurement describe themselves as polyloop.Describe describes the model
// they wrap, so that a run they stop resumes with the bare model.
func TestWrappersKeepTheModelsIdentity(t *testing.T) {
	t.Parallel()
	for _, m := range []polyloop.ModelClient{scriptmodel.New(scriptmodel.Turn{Text: "hi"}), plainModel{}} {
		want := polyloop.Describe(m)
		for name, got := range map[string]polyloop.Component{
			"stopBefore": stopBefore{ModelClient: m}.Describe(),
			"firstCall":  (&firstCall{ModelClient: m}).Describe(),
		} {
			if got.Name != want.Name || string(got.Config) != string(want.Config) {
				t.Errorf("%s over %T: %+v, want polyloop.Describe's %+v", name, m, got, want)
			}
		}
	}
}
