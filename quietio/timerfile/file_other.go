//go:build !linux

package timerfile

import "errors"

// File is the timer file Alarm; other systems have none, and Open says so
// (New then gives a Go timer).
type File struct{ *ClockAlarm }

// Open fails: timer files are Linux's.
func Open(string, func(error)) (*File, error) {
	return nil, errors.New("timerfile: no timer files on this system")
}
