package cluster

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/probelet/probelet/internal/testbed/harness"
)

// TestGCRemovesOnlyAbandoned runs hack/cluster/gc.sh over directories that
// run nothing: control planes and kubelets owned by this test, ones whose
// owner is gone, and ones with an owner file but no marker.
func TestGCRemovesOnlyAbandoned(t *testing.T) {
	scripts := locatedScripts(t)
	if err := scripts.SetCacheDir(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	dirs := []struct {
		name, marker string
		owner        string // "self", "gone" or "" (no marker, owner 1 1)
		wantKept     bool
	}{
		{"pkc-live", clusterMarker, "self", true},
		{"pkc-dead", clusterMarker, "gone", false},
		{"pkc-manual", "", "", true},
		{"pkl-live", kubeletMarker, "self", true},
		{"pkl-dead", kubeletMarker, "gone", false},
		{"pkl-manual", "", "", true},
		{"pkl-wrong-marker", clusterMarker, "gone", true},
	}
	for _, d := range dirs {
		dir := filepath.Join(base, d.name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		switch d.owner {
		case "self", "gone":
			if err := harness.MarkOwned(dir, d.marker); err != nil {
				t.Fatal(err)
			}
			if d.owner == "gone" { // this PID with another start time: a reused PID
				writeFile(t, filepath.Join(dir, harness.OwnerFile), strconv.Itoa(os.Getpid())+" 1\n")
			}
		default:
			writeFile(t, filepath.Join(dir, harness.OwnerFile), "1 1\n")
		}
	}
	if err := scripts.RemoveAbandoned(base); err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		_, err := os.Stat(filepath.Join(base, d.name))
		if kept := err == nil; kept != d.wantKept {
			t.Errorf("%s kept = %v, want %v", d.name, kept, d.wantKept)
		}
	}
}

// TestHostLease drives hoststate.sh against a fake /proc/sys: the first
// kubelet saves the host state, a second one joins, and only the last one
// out restores it; a holder whose directory vanished does not block that.
func TestHostLease(t *testing.T) {
	scripts := locatedScripts(t).Dir
	root := t.TempDir()
	procSys, logs, cache := filepath.Join(root, "sys"), filepath.Join(root, "containers"), filepath.Join(root, "cache")
	sysctls := []string{"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
		"kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes"}
	for i, s := range sysctls {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(procSys, s)), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(procSys, s), strconv.Itoa(i)+"\n")
	}
	for _, d := range []string{"a", "b", "c", "cache"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{"PROC_SYS=" + procSys, "CONTAINER_LOGS=" + logs, "PROBELET_TESTBED_CACHE=" + cache}
	lease := func(step string) { t.Helper(); runLease(t, scripts, step, env) }
	// kubelet: what a starting kubelet does to the host.
	kubelet := func() {
		for _, s := range sysctls {
			writeFile(t, filepath.Join(procSys, s), "99\n")
		}
		if err := os.MkdirAll(logs, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	check := func(when string, wantOriginal bool) {
		t.Helper()
		for i, s := range sysctls {
			data, _ := os.ReadFile(filepath.Join(procSys, s))
			want := "99"
			if wantOriginal {
				want = strconv.Itoa(i)
			}
			if got := strings.TrimSpace(string(data)); got != want {
				t.Errorf("%s: %s = %s, want %s", when, s, got, want)
			}
		}
		if _, err := os.Stat(logs); (err == nil) == wantOriginal {
			t.Errorf("%s: %s exists = %v, want %v", when, logs, err == nil, !wantOriginal)
		}
	}

	lease("host_lease_take " + root + "/a")
	kubelet()
	lease("host_lease_take " + root + "/b")
	lease("host_lease_drop " + root + "/a")
	check("after the first of two left", false)
	lease("host_lease_drop " + root + "/b")
	check("after the last left", true)

	// c's directory is removed by hand while it holds the lease: the next
	// take restores what c's kubelet changed before saving again.
	lease("host_lease_take " + root + "/c")
	kubelet()
	if err := os.RemoveAll(filepath.Join(root, "c")); err != nil {
		t.Fatal(err)
	}
	lease("host_lease_take " + root + "/a")
	check("after a take over a vanished holder", true)
	lease("host_lease_drop " + root + "/a")
	check("after the drop", true)
}

// runLease runs a command line in bash with hack/cluster/lib.sh and
// hoststate.sh sourced, failing the test with its output on an error.
func runLease(t *testing.T, scripts, command string, env []string) {
	t.Helper()
	cmd := exec.Command("bash", "-c", `set -euo pipefail; . "$1/lib.sh"; . "$1/hoststate.sh"; `+command, "bash", scripts)
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", command, err, out)
	}
}

func locatedScripts(t *testing.T) harness.Scripts {
	t.Helper()
	s := newScripts()
	if err := s.Locate(); err != nil {
		t.Fatal(err)
	}
	return s
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
