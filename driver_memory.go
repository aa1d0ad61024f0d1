package polyloop

import (
	"context"
	"errors"
	"fmt"
	"text/template"
)

// maintain runs the agent's Maintainer for the step the machine handed out,
// in a scope where InvokeChild and Perform record what they do in the
// step's maintenance, and feeds the machine its end.
func (d *driver) maintain(ctx context.Context, step MaintainedStep) error {
	if d.memory == nil || d.memory.Maintainer == nil {
		return fmt.Errorf("%w: step %d waits for its maintenance, and the agent has no Maintainer", ErrInvalidConfig, step.Step)
	}
	scope := &actionScope{Context: ctx, info: ActionInfo{RunID: d.runID, Step: step.Step}, d: d, maintenance: true}
	err := d.memory.Maintainer.Maintain(scope, step)
	if n := scope.close(); n > 0 && err == nil {
		// What is still under way would be recorded after maintenance_done.
		err = fmt.Errorf("%w: the maintenance of step %d returned while %d of its children or operations were under way", ErrNotInAction, step.Step, n)
	}
	if err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.tickFact()
	d.m.maintained()
	return nil
}

// name names the scope in errors.
func (s *actionScope) name() string {
	if s.maintenance {
		return fmt.Sprintf("the maintenance of step %d", s.info.Step)
	}
	return "action " + s.info.ActionID
}

// startOp reserves an operation's name in the maintenance; done must be
// called when the operation returns.
func (s *actionScope) startOp(name string) (done func(), err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, fmt.Errorf("%w: %s has already returned", ErrNotInMaintenance, s.name())
	}
	if s.ops[name] {
		return nil, fmt.Errorf("%w: operation %q performed twice in %s", ErrInvalidConfig, name, s.name())
	}
	if s.ops == nil {
		s.ops = map[string]bool{}
	}
	s.ops[name] = true
	s.active++
	return func() { s.mu.Lock(); s.active--; s.mu.Unlock() }, nil
}

// writeOp records an operation's outcome, unless the maintenance has
// already returned.
func (s *actionScope) writeOp(ctx context.Context, rec *MaintenanceOp) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("%w: %s returned before operation %q was recorded", ErrNotInMaintenance, s.name(), rec.Name)
	}
	d := s.d
	d.mu.Lock()
	defer d.mu.Unlock()
	d.tickFact()
	return d.settle(ctx, d.m.addFact(rec))
}

// operation returns the recorded outcome of an operation of the open
// maintenance, if any, and whether a configuration change since hands its
// failure to the policy in force.
func (d *driver) operation(name string) (*MaintenanceOp, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.m.st.maint.ops[name], d.m.st.receivesAgain(name)
}

// fetchView asks the agent's view for its current version and feeds it,
// rendered, to the machine. When that fails or ctx is done, the facts
// pending are written first: nothing that happened is lost.
func (d *driver) fetchView(ctx context.Context) error {
	if d.memory == nil || d.memory.View == nil {
		return d.keepFacts(ctx, fmt.Errorf("%w: the snapshot shows a view, and the agent has none", ErrInvalidConfig))
	}
	if cause := ctx.Err(); cause != nil {
		return d.keepFacts(ctx, cause)
	}
	content, err := d.memory.View.CurrentView(ctx)
	var text string
	if err == nil {
		text, err = d.renderView(content)
	}
	if err != nil {
		return d.keepFacts(ctx, err)
	}
	d.m.viewed(content.Ref(), text)
	return nil
}

// renderView renders a view version with the template of the snapshot in
// force. A version never changes: the last rendering is reused for the same
// version and template.
func (d *driver) renderView(v ViewContent) (string, error) {
	text := d.m.st.snap.Memory.Template
	if d.viewTmpl == nil || d.viewTmplText != text {
		t, err := viewTemplate(text)
		if err != nil {
			return "", fmt.Errorf("%w: view template: %v", ErrInvalidConfig, err)
		}
		d.viewTmpl, d.viewTmplText, d.rendered = t, text, nil
	}
	if d.rendered != nil && d.rendered.ref == v.Ref() {
		return d.rendered.text, nil
	}
	out, err := renderView(d.viewTmpl, v)
	if err == nil {
		d.rendered = &fedView{ref: v.Ref(), text: out}
	}
	return out, err
}

// keepFacts writes the facts the machine has pending and returns cause,
// joined with a failure to write them.
func (d *driver) keepFacts(ctx context.Context, cause error) error {
	if err := d.settle(ctx, ready{records: d.m.take()}.facts()); err != nil {
		return errors.Join(cause, err)
	}
	return cause
}

// driverMemory is what the driver keeps of the agent's memory.
type driverMemory struct {
	memory       *AgentMemory
	viewTmpl     *template.Template
	viewTmplText string
	rendered     *fedView // the last rendering, by version
}
