package cli

import (
	"io"

	"k8s.io/utils/clock"
)

// IOStreams are where commands write.
type IOStreams struct {
	// Out receives results.
	Out io.Writer
	// ErrOut receives errors and warnings.
	ErrOut io.Writer
}

// Env is the part of the process environment probectl reads.
type Env struct {
	// Lookup reads an environment variable (os.LookupEnv).
	Lookup func(key string) (string, bool)
	// Clock tells ages and "ago" times.
	Clock clock.PassiveClock
}
