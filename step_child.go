package polyloop

// receive records a child's reception by the open action i; the records are
// written at once (they are facts, and the child's caller waits for them).
func (m *machine) receive(rec *ChildReception) []Record {
	m.add(rec)
	return m.take()
}
