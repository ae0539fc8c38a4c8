package cli

import (
	"errors"
	"fmt"
)

// Exit codes.
const (
	// ExitOK is success.
	ExitOK = 0
	// ExitError is a failure: probelet unreachable, a server error.
	ExitError = 1
	// ExitUsage is bad flags or arguments, including an ambiguous or
	// malformed container reference.
	ExitUsage = 2
	// ExitNotFound means the container asked for does not exist.
	ExitNotFound = 3
)

// exitError carries the exit code an error should end probectl with.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// withCode wraps err with an exit code; nil stays nil.
func withCode(code int, err error) error {
	if err == nil {
		return nil
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return err
	}
	return &exitError{code: code, err: err}
}

// usageErrorf is a usage error with a formatted message.
func usageErrorf(format string, args ...any) error {
	return &exitError{code: ExitUsage, err: fmt.Errorf(format, args...)}
}

// ExitCode maps an error returned by Execute to probectl's exit code.
// Errors from commands carry their code; anything else came from cobra's
// own parsing and is a usage error.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return ExitUsage
}
