package sweep

import (
	"context"
	"testing"

	"github.com/polyloop/polyloop"
	"github.com/polyloop/polyloop/scriptmodel"
)

// boundedProvider records the bounds a sweep asks of it.
type boundedProvider struct{ bounds []int }

func (p *boundedProvider) Create(context.Context, polyloop.EnvSpec) (polyloop.Environment, error) {
	return nil, polyloop.ErrEnvUnsupported
}

func (p *boundedProvider) Describe(_ context.Context, spec polyloop.EnvSpec) (polyloop.EnvDescription, error) {
	return spec.Describe("fake", "sha256:0"), nil
}

func (p *boundedProvider) BoundEnvironments(n int) { p.bounds = append(p.bounds, n) }

// TestMaxEnvironmentsBoundsProvider: a provider that keeps environments
// its runs do not hold (polyloop.EnvBounder) is bounded by the sweep's
// max_environments — unless the sweep keeps its scorers' environments,
// which no one holds and which would fill the bound for good.
func TestMaxEnvironmentsBoundsProvider(t *testing.T) {
	for _, tc := range []struct {
		max  int
		keep bool
		want []int
	}{{3, false, []int{3}}, {0, false, nil}, {3, true, nil}} {
		p := &boundedProvider{}
		a := testAgent("a", scriptmodel.New(scriptmodel.Reply("x")))
		a.Agent.Environment = &polyloop.EnvSpec{Image: "img"}
		a.Environments = p
		if _, err := New(Definition{Name: "s", Agents: []*Agent{a}, Tasks: numberTasks(1), MaxEnvironments: tc.max, KeepEnvironments: tc.keep}); err != nil {
			t.Fatal(err)
		}
		if len(p.bounds) != len(tc.want) || (len(tc.want) > 0 && p.bounds[0] != tc.want[0]) {
			t.Errorf("max_environments %d, keep %v: bounds asked %v, want %v", tc.max, tc.keep, p.bounds, tc.want)
		}
	}
}
