package main

import "testing"

// The example runs to its end: its own checks (the interruption happened,
// the resume completed) return an error otherwise.
func TestExample(t *testing.T) {
	if err := run(); err != nil {
		t.Fatal(err)
	}
}
