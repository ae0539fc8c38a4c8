package testbed

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/probelet/probelet/internal/testbed/harness"
)

// TestGCRemovesOnlyAbandonedBeds runs hack/testbed/gc.sh over beds that
// run nothing: one owned by this test, one whose owner is gone, and a
// directory with an owner file but no bed marker.
func TestGCRemovesOnlyAbandonedBeds(t *testing.T) {
	b, err := newBed(t, []Option{WithCacheDir(t.TempDir())})
	if err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	live, dead, manual := filepath.Join(base, "pbt-live"), filepath.Join(base, "pbt-dead"), filepath.Join(base, "pbt-manual")
	for _, d := range []string{live, dead, manual} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{live, dead} {
		if err := harness.MarkOwned(d, bedMarker); err != nil {
			t.Fatal(err)
		}
	}
	// This PID with another start time: a reused PID, so the owner is gone.
	if err := os.WriteFile(filepath.Join(dead, harness.OwnerFile), []byte(strconv.Itoa(os.Getpid())+" 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// An owner file without the marker is not a bed: gc.sh must leave it.
	if err := os.WriteFile(filepath.Join(manual, harness.OwnerFile), []byte("1 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := b.scripts.RemoveAbandoned(base); err != nil {
		t.Fatal(err)
	}
	for d, wantKept := range map[string]bool{live: true, dead: false, manual: true} {
		_, err := os.Stat(d)
		if kept := err == nil; kept != wantKept {
			t.Errorf("%s kept = %v, want %v", filepath.Base(d), kept, wantKept)
		}
	}
}
