package polyloop

import "strings"

// The step machine's part in memory: the view each model call shows, and
// the maintenance after each step.

// machineMemory is what the machine keeps of them.
type machineMemory struct {
	// view is the view version fed for the next model-call intent, with
	// its rendering; nil until the driver fed it.
	view *fedView
	// maintaining is set while the maintenance handed out has not ended.
	maintaining bool
	// shown is the history with the view's message, kept up to date.
	shown viewHistory
}

type fedView struct {
	ref  ViewRef
	text string
}

// wantsView reports whether the next model-call intent needs a view version
// the driver has not fed yet.
func (m *machine) wantsView() bool {
	mem := m.st.snap.Memory
	return mem != nil && mem.View != nil && m.view == nil
}

// viewed feeds the current version of the agent's view and its rendering.
func (m *machine) viewed(ref ViewRef, text string) { m.view = &fedView{ref: ref, text: text} }

// viewRef is the reference of the view fed, for the intent.
func (m *machine) viewRef() *ViewRef {
	if m.view == nil {
		return nil
	}
	ref := m.view.ref
	return &ref
}

// requestMessages is the history the next call shows: with the view fed
// (which it uses up), or as the log rebuilds it.
func (m *machine) requestMessages() []Message {
	msgs := m.st.hist.msgs
	if m.view != nil {
		msgs = m.shown.with(msgs, m.view.text)
		m.view = nil
	}
	return msgs
}

// viewHistory mirrors the history with a view's message after the system
// prompt. The history only grows between calls, but for its start and its
// system prompt (a config override): the mirror appends what is new, and is
// rebuilt when the start changed, so a step costs what it added, not the
// whole history.
type viewHistory struct {
	buf      []Message // the mirror: [system] view rest…
	mirrored int       // history messages in buf
	system   *Message  // the history's system message when mirrored, or nil
}

func (h *viewHistory) with(msgs []Message, text string) []Message {
	if strings.TrimSpace(text) == "" {
		return msgs
	}
	var sys *Message
	if len(msgs) > 0 && msgs[0].Role == RoleSystem {
		sys = &msgs[0]
	}
	if h.mirrored > len(msgs) || h.buf == nil || (sys == nil) != (h.system == nil) || (sys != nil && sys.Content != h.system.Content) {
		h.buf, h.mirrored, h.system = withView(h.buf[:0], msgs, text), len(msgs), nil
		if sys != nil {
			s := *sys
			h.system = &s
		}
		return h.buf
	}
	h.buf = append(h.buf, msgs[h.mirrored:]...)
	h.mirrored = len(msgs)
	h.buf[h.viewAt()].Content = text
	return h.buf
}

// viewAt is the index of the view's message in the mirror.
func (h *viewHistory) viewAt() int {
	if h.system != nil {
		return 1
	}
	return 0
}

// maintain hands out the maintenance of the last completed step.
func (m *machine) maintain() effect {
	if m.maintaining {
		panic("polyloop: internal error: next called while the step's maintenance is under way")
	}
	m.maintaining = true
	return effect{kind: effectMaintain, maint: m.st.maintainedStep()}
}

// maintained feeds the end of the step's maintenance: its Maintainer
// returned nil.
func (m *machine) maintained() {
	m.maintaining = false
	m.add(&MaintenanceDone{Step: m.st.step})
}

// addFact queues a fact recorded during an effect (a maintenance operation)
// and returns it for writing at once.
func (m *machine) addFact(b RecordBody) []Record {
	m.add(b)
	return m.take()
}
