package sqlitestore

// SetAfterInsert lets the external test package (the crash test's child)
// set the writer's afterInsert hook: f runs inside the write transaction,
// after an Append's records are inserted and before the commit. Call it
// before the first Append.
func SetAfterInsert(s *Store, f func(runID string)) {
	s.afterInsert = func(runID string, _ bool) error {
		f(runID)
		return nil
	}
}

// Migration returns migrations[i], for tests that build a file of an older
// schema.
func Migration(i int) string { return migrations[i] }
