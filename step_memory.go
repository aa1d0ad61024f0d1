package polyloop

// The step machine's part in memory: the view each model call shows, and
// the maintenance after each step.

// machineMemory is what the machine keeps of them.
type machineMemory struct {
	// view is the view version fed for the next model-call intent, with
	// its rendering; nil until the driver fed it.
	view *fedView
	// maintaining is set while the maintenance handed out has not ended.
	maintaining bool
	// msgBuf holds the request's messages when a view is shown (reused).
	msgBuf []Message
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
		m.msgBuf = withView(m.msgBuf, msgs, m.view.text)
		if len(m.msgBuf) > len(msgs) {
			msgs = m.msgBuf
		}
		m.view = nil
	}
	return msgs
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
