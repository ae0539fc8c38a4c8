//go:build !linux

package prober

import "errors"

// newTimerfdAlarm: timer files are Linux's; other systems use a Go timer.
func newTimerfdAlarm(func(error)) (alarm, error) {
	return nil, errors.New("prober: no timer files on this system")
}
