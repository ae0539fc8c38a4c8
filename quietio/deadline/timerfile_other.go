//go:build !linux

package deadline

import "errors"

// Without timer files, WithDeadline is context.WithDeadline.
func newTimerFile() (alarm, error) { return nil, errors.New("no timer files") }
