package history_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/probelet/probelet/history"
)

// FuzzOpen feeds Open whatever a disk may hold in the history file (a
// crash's torn line, another program's file, bit rot): Open never fails on
// a usable directory and never panics, keeps no more than its bounds, and
// either restores the file (it stays) or sets it aside (it is gone, so it
// is never read again).
func FuzzOpen(f *testing.F) {
	for _, seed := range []string{
		"",
		`{"format":"probelet.io/history/v2","events":[],"restarts":{}}` + "\n",
		`{"format":"probelet.io/history/v1","events":[{"reason":"Killing"}],"restarts":{}}`,
		`{"format":"probelet.io/history/v2","events":[],"restarts":{}}` + "\n" +
			`{"event":{"reason":"Unhealthy","message":"Readiness probe failed"}}` + "\n" +
			`{"restarts":{"pod":"uid-1","updated":"2026-11-28T12:00:00Z","byContainer":{"app":[{"probeType":"liveness"}]}}}` + "\n" +
			`{"event":{"reason":"Kil`,
		`{"format":"probelet.io/history/v2","restarts":{"uid-1":{"byContainer":{"app":null}}}}` + "\n{}\n",
		`{"format":"something else"}`,
		"\x00\xff\n\n",
	} {
		f.Add([]byte(seed))
	}
	const maxEvents, maxPods = 8, 4
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, history.FileName)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		l, err := history.Open(dir, history.WithBounds(maxEvents, maxPods))
		if err != nil {
			t.Fatalf("Open on a usable directory = %v", err)
		}
		if n := len(l.Events()); n > maxEvents {
			t.Errorf("%d events kept, bound %d", n, maxEvents)
		}
		_, statErr := os.Stat(path)
		// Set aside as unreadable, or as a later release's (newer).
		aside, _ := filepath.Glob(path + ".corrupt-*")
		newer, _ := filepath.Glob(path + ".newer-*")
		aside = append(aside, newer...)
		switch {
		case statErr == nil && len(aside) == 0: // restored
		case errors.Is(statErr, os.ErrNotExist) && len(aside) == 1: // set aside
			if len(l.Events()) != 0 {
				t.Errorf("set aside, yet %d events kept", len(l.Events()))
			}
		default:
			t.Errorf("file neither restored nor set aside: stat %v, %d copies aside", statErr, len(aside))
		}
	})
}
