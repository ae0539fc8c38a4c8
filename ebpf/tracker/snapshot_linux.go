package tracker

import (
	"fmt"
	"io"

	"github.com/cilium/ebpf/link"
)

// snapshot runs the iter/task_file program once over every task's files.
// It writes nothing to the seq_file; reading it to EOF drives it, and each
// listener not seen before arrives through the ring buffer like a live one.
func (t *Tracker) snapshot() error {
	it, err := link.AttachIter(link.IterOptions{Program: t.objs.Snapshot})
	if err != nil {
		return fmt.Errorf("tracker: attach iter/task_file: %w", err)
	}
	defer it.Close()
	rd, err := it.Open()
	if err != nil {
		return fmt.Errorf("tracker: open snapshot iterator: %w", err)
	}
	defer rd.Close()
	if _, err := io.Copy(io.Discard, rd); err != nil {
		return fmt.Errorf("tracker: run snapshot iterator: %w", err)
	}
	return nil
}
