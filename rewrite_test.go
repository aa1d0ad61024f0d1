package polyloop_test

import "flag"

// rewriting reports whether the test binary runs with -rewrite, the one
// flag that regenerates every golden file of the repository (it is
// github.com/cockroachdb/datadriven's, which the traces of this package
// use).
func rewriting() bool {
	f := flag.Lookup("rewrite")
	return f != nil && f.Value.String() == "true"
}
