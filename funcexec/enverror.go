package funcexec

// EnvironmentError marks an error as "the environment is broken": a tool
// function that returns one (possibly wrapped further) makes Execute report
// polyloop.EnvError, which ends the run. Build it with EnvError.
type EnvironmentError struct {
	Err error
}

// EnvError wraps err so that a tool function can say the environment cannot
// keep serving (a database that is gone, a dependency that refuses every
// connection). It returns nil when err is nil. Ordinary failures of the
// action itself should be returned unwrapped: they are observations the model
// can learn from.
func EnvError(err error) error {
	if err == nil {
		return nil
	}
	return &EnvironmentError{Err: err}
}

func (e *EnvironmentError) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *EnvironmentError) Unwrap() error { return e.Err }
