package testbed

import (
	"errors"
	"path/filepath"
	"time"
)

// Option configures Start.
type Option func(*Bed) error

// WithCacheDir sets the build cache (default $PROBELET_TESTBED_CACHE, else
// /var/cache/probelet-testbed).
func WithCacheDir(dir string) Option {
	return func(b *Bed) error {
		if !filepath.IsAbs(dir) {
			return errors.New("testbed: cache dir must be absolute, got " + dir)
		}
		b.cacheDir = dir
		return nil
	}
}

// WithScriptsDir sets where hack/testbed's scripts are (default: found from
// this package's source or by walking up from the working directory).
func WithScriptsDir(dir string) Option {
	return func(b *Bed) error {
		if dir == "" {
			return errors.New("testbed: empty scripts dir")
		}
		b.scripts = dir
		return nil
	}
}

// WithStartTimeout bounds Start, including a cold build (default 15 min).
func WithStartTimeout(d time.Duration) Option {
	return func(b *Bed) error {
		if d <= 0 {
			return errors.New("testbed: start timeout must be positive")
		}
		b.startTimeout = d
		return nil
	}
}
