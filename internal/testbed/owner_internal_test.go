package testbed

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestProcessStartMatchesProc(t *testing.T) {
	start, err := processStart(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// awk's field 22 is right for this process: its comm has no spaces.
	out, err := exec.Command("awk", "{print $22}", "/proc/"+strconv.Itoa(os.Getpid())+"/stat").Output()
	if err != nil {
		t.Skipf("awk: %v", err)
	}
	if want := strings.TrimSpace(string(out)); start != want {
		t.Errorf("processStart = %q, want %q", start, want)
	}
	if _, err := processStart(-1); err == nil {
		t.Error("processStart(-1): no error")
	}
}

// TestGCRemovesOnlyAbandonedBeds runs hack/testbed/gc.sh over beds that
// run nothing: one owned by this test, one whose owner is gone, and a
// directory with an owner file but no bed marker.
func TestGCRemovesOnlyAbandonedBeds(t *testing.T) {
	scripts, err := findScripts()
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
		if err := markBed(d); err != nil {
			t.Fatal(err)
		}
	}
	// This PID with another start time: a reused PID, so the owner is gone.
	if err := os.WriteFile(filepath.Join(dead, ownerFile), []byte(strconv.Itoa(os.Getpid())+" 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// An owner file without the marker is not a bed: gc.sh must leave it.
	if err := os.WriteFile(filepath.Join(manual, ownerFile), []byte("1 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(scripts, "gc.sh"), base)
	cmd.Env = append(os.Environ(), "PROBELET_TESTBED_CACHE="+t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gc.sh: %v\n%s", err, out)
	}
	for d, wantKept := range map[string]bool{live: true, dead: false, manual: true} {
		_, err := os.Stat(d)
		if kept := err == nil; kept != wantKept {
			t.Errorf("%s kept = %v, want %v", filepath.Base(d), kept, wantKept)
		}
	}
}
