package testbed

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/probelet/probelet/internal/testbed/harness"
)

// Image references the bed imports; RunPod uses BusyboxImage by default.
const (
	PauseImage   = "localhost/probelet/pause:testbed"
	BusyboxImage = "localhost/probelet/busybox:testbed"
)

const (
	defaultStartTimeout = 15 * time.Minute
	// bedMarker marks a directory as a test bed for hack/testbed's scripts.
	bedMarker = ".probelet-testbed"
)

// bedKind is how hack/testbed names, marks and tears down a bed's
// directory of runtime.
func bedKind(runtime string) harness.Kind {
	return harness.Kind{
		Noun:   runtime + " test bed",
		Prefix: "pbt-",
		Marker: bedMarker,
		Down:   []string{"down.sh"},
		Logs:   []harness.Log{{File: runtime + ".log", Lines: 30}},
	}
}

// DefaultRuntime is the runtime Start runs unless told (WithRuntime):
// $PROBELET_TESTBED_RUNTIME, else containerd. The e2e suite's core runs
// once per runtime this way.
func DefaultRuntime() string {
	if r := os.Getenv("PROBELET_TESTBED_RUNTIME"); r != "" {
		return r
	}
	return Containerd
}

// Bed is one running test bed: containerd or CRI-O. Its methods are safe
// for concurrent use.
type Bed struct {
	t            testing.TB
	runtime      string
	scripts      harness.Scripts
	owned        *harness.Owned
	crictl       string
	ctr          string
	copyimg      string // CRI-O beds only
	bridge       string
	cgroupParent string

	mu   sync.Mutex
	pods map[string]*podRecord
	seq  int
}

// Start builds what is missing, starts a test bed (containerd unless
// $PROBELET_TESTBED_RUNTIME or WithRuntime says crio) in a fresh directory
// and registers its teardown with t.Cleanup. It never returns on failure:
// the test is failed (or, without root outside CI, skipped).
func Start(t testing.TB, opts ...Option) *Bed {
	t.Helper()
	harness.RequireRoot(t, "testbed: the test bed")
	b, err := newBed(t, opts)
	if err != nil {
		t.Fatalf("testbed: %v", err)
	}
	if err := b.up(); err != nil {
		t.Fatalf("testbed: cannot start the %s test bed: %v", b.runtime, err)
	}
	return b
}

func newBed(t testing.TB, opts []Option) (*Bed, error) {
	b := &Bed{t: t, runtime: DefaultRuntime(), scripts: harness.NewScripts("testbed", defaultStartTimeout), pods: map[string]*podRecord{}}
	for _, opt := range opts {
		if err := opt(b); err != nil {
			return nil, err
		}
	}
	if b.runtime != Containerd && b.runtime != CRIO {
		return nil, fmt.Errorf("unknown runtime %q (%s or %s)", b.runtime, Containerd, CRIO)
	}
	b.scripts.Env = append(b.scripts.Env, "PROBELET_TESTBED_RUNTIME="+b.runtime)
	if err := b.scripts.Locate(); err != nil {
		return nil, err
	}
	return b, nil
}

// up builds, claims a fresh directory and starts the runtime in it.
func (b *Bed) up() error {
	bins, err := b.scripts.Build("crictl", "ctr")
	if err != nil {
		return err
	}
	b.crictl, b.ctr, b.copyimg = bins["crictl"], bins["ctr"], bins["copyimg"]
	if b.owned, err = harness.Claim(b.t, b.scripts, bedKind(b.runtime)); err != nil {
		return err
	}
	b.t.Logf("testbed: starting %s in %s", b.runtime, b.Dir())
	return b.startIn(b.Dir())
}

// startIn runs up.sh and reads the network names it chose.
func (b *Bed) startIn(dir string) error {
	if _, err := b.scripts.Run(b.scripts.StartTimeout, "up.sh", dir); err != nil {
		return err
	}
	env, err := harness.ReadEnvFile(filepath.Join(dir, "testbed.env"))
	if err != nil {
		return err
	}
	b.bridge, b.cgroupParent = env["BRIDGE"], env["CGROUP_PARENT"]
	return nil
}

// Stop tears the bed down: every pod, the runtime, its shims (conmons) and
// containers, mounts, cgroups, the bridge and the directory. Idempotent;
// Start registers it with t.Cleanup, so tests call it only to check the
// result.
func (b *Bed) Stop() error { return b.owned.Stop() }

// Dir is the bed's directory; every file of its runtime lives under it.
func (b *Bed) Dir() string { return b.owned.Dir() }

// Runtime is the bed's runtime: Containerd or CRIO.
func (b *Bed) Runtime() string { return b.runtime }

// CRIEndpoint is the runtime's CRI endpoint, unix://DIR/containerd.sock
// (or crio.sock).
func (b *Bed) CRIEndpoint() string { return "unix://" + b.socket() }

// NRISocket is the path where the runtime accepts NRI plugins.
func (b *Bed) NRISocket() string { return filepath.Join(b.Dir(), "nri.sock") }

// Bridge is the name of the bed's CNI bridge (created with the first pod).
func (b *Bed) Bridge() string { return b.bridge }

// CgroupParent is the cgroupfs parent of every pod of the bed.
func (b *Bed) CgroupParent() string { return b.cgroupParent }

// CrictlPath is the crictl binary the bed runs (built by hack/testbed), for
// pointing it at other CRI sockets.
func (b *Bed) CrictlPath() string { return b.crictl }

// LogPath is the runtime's log file.
func (b *Bed) LogPath() string { return filepath.Join(b.Dir(), b.runtime+".log") }

func (b *Bed) socket() string { return filepath.Join(b.Dir(), b.runtime+".sock") }
