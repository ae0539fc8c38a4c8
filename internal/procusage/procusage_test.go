//go:build linux

package procusage_test

import (
	"os"
	"testing"
	"time"

	"github.com/probelet/probelet/internal/procusage"
)

// This process's own CPU clock moves with work, and its RSS holds what it
// touched.
func TestReadsThisProcess(t *testing.T) {
	pid := os.Getpid()
	before, err := procusage.CPUTime(pid)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Millisecond); time.Now().Before(deadline); {
	}
	after, err := procusage.CPUTime(pid)
	if err != nil {
		t.Fatal(err)
	}
	if after <= before {
		t.Errorf("CPU time %v then %v after spinning", before, after)
	}
	held := make([]byte, 32<<20)
	for i := range held {
		held[i] = 1
	}
	rss, err := procusage.RSS(pid)
	if err != nil {
		t.Fatal(err)
	}
	if rss < int64(len(held)) {
		t.Errorf("RSS %d bytes while holding %d", rss, len(held))
	}
	_ = held[len(held)-1]
}

func TestAGoneProcessIsAnError(t *testing.T) {
	if _, err := procusage.RSS(1 << 30); err == nil {
		t.Error("RSS of no process: no error")
	}
	if _, err := procusage.CPUTime(1 << 22); err == nil {
		t.Error("CPU time of no process: no error")
	}
}
