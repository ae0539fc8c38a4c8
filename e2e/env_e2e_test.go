//go:build e2e && (bench || soak)

package e2e_test

import (
	"os"
	"strconv"
	"time"
)

// envInt and envDuration read a benchmark's or soak's size from the
// environment (make bench, make soak), with a default.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func envDuration(name string, def time.Duration) time.Duration {
	if v, err := time.ParseDuration(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}
