//go:build e2e

package e2e_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/probelet/probelet/internal/testbed"
	"github.com/probelet/probelet/probespec"
)

// TestHistorySurvivesARestart: the restart probelet issued and its probe
// events are still shown after probelet crashes (SIGKILL) and starts again,
// from the history file in its state directory; a corrupt history file is
// set aside and probelet starts anyway.
func TestHistorySurvivesARestart(t *testing.T) {
	t.Parallel()
	bed := testbed.Start(t)
	d := startProbelet(t, bed)
	live := execProbe(1, 1, "test", "-f", "/tmp/alive")
	grace := int64(2)
	a := runApp(t, bed, appSpec{name: "app", cmd: shell("touch /tmp/alive; exec sleep 3600"), grace: &grace,
		probes: probespec.ContainerProbes{Liveness: live}})
	waitProbe(t, d, a, "liveness", "Success")
	mustExec(t, bed, a.ctr, "rm", "/tmp/alive")
	var before detailView
	eventually(t, 15*time.Second, "the liveness restart", func() (bool, string) {
		before = d.describe(a.ctr)
		return len(before.Restarts) == 1, fmt.Sprintf("restarts %+v", before.Restarts)
	})
	waitExited(t, bed, a.ctr, 15*time.Second)
	// The kubelet would start the next instance; the bed does it here.
	next, err := bed.StartContainer(a.pod, testbed.ContainerSpec{Name: "app", Command: shell("touch /tmp/alive; exec sleep 3600"), Ports: httpPort})
	if err != nil {
		t.Fatal(err)
	}
	history := filepath.Join(bed.Dir(), "state", "history.json")
	eventually(t, 10*time.Second, "the restart in the history file", func() (bool, string) {
		data, _ := os.ReadFile(history)
		return strings.Contains(string(data), a.ctr) && strings.Contains(string(data), `"Killing"`), string(data)
	})

	d.kill()
	d.start()
	waitProbe(t, d, app{ctr: next}, "liveness", "Success")
	after := d.describe(next)
	if len(after.Restarts) != 1 || after.Restarts[0] != before.Restarts[0] {
		t.Fatalf("restarts after the crash = %+v, want %+v", after.Restarts, before.Restarts)
	}
	if out := d.mustProbectl("events", "-o", "json"); !strings.Contains(out, `"Killing"`) || !strings.Contains(out, a.ctr) {
		t.Fatalf("probectl events after the crash lost the Killing event:\n%s", out)
	}
	if why := d.mustProbectl("why", next); !strings.Contains(why, "restarted the container 1 time") {
		t.Errorf("probectl why after the crash:\n%s", why)
	}

	// A corrupt file is set aside; probelet starts anyway, with no history.
	d.stop()
	if err := os.WriteFile(history, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	d.start()
	if aside, _ := filepath.Glob(history + ".corrupt-*"); len(aside) != 1 {
		t.Errorf("corrupt history not set aside: %v", aside)
	}
	if warns := d.logsMatching("History file unreadable"); len(warns) != 1 {
		t.Errorf("corrupt history reported %d times, want once", len(warns))
	}
}
