package testbed

import "time"

// Option configures Start.
type Option func(*Bed) error

// WithCacheDir sets the build cache (default $PROBELET_TESTBED_CACHE, else
// /var/cache/probelet-testbed).
func WithCacheDir(dir string) Option {
	return func(b *Bed) error { return b.scripts.SetCacheDir(dir) }
}

// WithScriptsDir sets where hack/testbed's scripts are (default: found from
// this package's source or by walking up from the working directory).
func WithScriptsDir(dir string) Option {
	return func(b *Bed) error { return b.scripts.SetDir(dir) }
}

// WithStartTimeout bounds Start, including a cold build (default 15 min).
func WithStartTimeout(d time.Duration) Option {
	return func(b *Bed) error { return b.scripts.SetStartTimeout(d) }
}

// WithRuntime sets the bed's runtime, Containerd or CRIO (default
// DefaultRuntime).
func WithRuntime(runtime string) Option {
	return func(b *Bed) error { b.runtime = runtime; return nil }
}
