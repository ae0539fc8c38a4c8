package testbed

import (
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

// bedKind is how hack/testbed names, marks and tears down a bed's directory.
var bedKind = harness.Kind{
	Noun:   "test bed",
	Prefix: "pbt-",
	Marker: bedMarker,
	Down:   []string{"down.sh"},
	Logs:   []harness.Log{{File: "containerd.log", Lines: 30}},
}

// Bed is one running containerd test bed. Its methods are safe for
// concurrent use.
type Bed struct {
	t            testing.TB
	scripts      harness.Scripts
	owned        *harness.Owned
	crictl       string
	ctr          string
	bridge       string
	cgroupParent string

	mu   sync.Mutex
	pods map[string]*podRecord
	seq  int
}

// Start builds what is missing, starts a containerd test bed in a fresh
// directory and registers its teardown with t.Cleanup. It never returns on
// failure: the test is failed (or, without root outside CI, skipped).
func Start(t testing.TB, opts ...Option) *Bed {
	t.Helper()
	harness.RequireRoot(t, "testbed: the containerd test bed")
	b, err := newBed(t, opts)
	if err != nil {
		t.Fatalf("testbed: %v", err)
	}
	if err := b.up(); err != nil {
		t.Fatalf("testbed: cannot start the containerd test bed: %v", err)
	}
	return b
}

func newBed(t testing.TB, opts []Option) (*Bed, error) {
	b := &Bed{t: t, scripts: harness.NewScripts("testbed", defaultStartTimeout), pods: map[string]*podRecord{}}
	for _, opt := range opts {
		if err := opt(b); err != nil {
			return nil, err
		}
	}
	if err := b.scripts.Locate(); err != nil {
		return nil, err
	}
	return b, nil
}

// up builds, claims a fresh directory and starts containerd in it.
func (b *Bed) up() error {
	bins, err := b.scripts.Build("crictl", "ctr")
	if err != nil {
		return err
	}
	b.crictl, b.ctr = bins["crictl"], bins["ctr"]
	if b.owned, err = harness.Claim(b.t, b.scripts, bedKind); err != nil {
		return err
	}
	b.t.Logf("testbed: starting containerd in %s", b.Dir())
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

// Stop tears the bed down: every pod, containerd, its shims and containers,
// mounts, cgroups, the bridge and the directory. Idempotent; Start
// registers it with t.Cleanup, so tests call it only to check the result.
func (b *Bed) Stop() error { return b.owned.Stop() }

// Dir is the bed's directory; every file of this containerd lives under it.
func (b *Bed) Dir() string { return b.owned.Dir() }

// CRIEndpoint is containerd's CRI endpoint, unix://DIR/containerd.sock.
func (b *Bed) CRIEndpoint() string { return "unix://" + b.socket() }

// NRISocket is the path where containerd accepts NRI plugins.
func (b *Bed) NRISocket() string { return filepath.Join(b.Dir(), "nri.sock") }

// Bridge is the name of the bed's CNI bridge (created with the first pod).
func (b *Bed) Bridge() string { return b.bridge }

// CgroupParent is the cgroupfs parent of every pod of the bed.
func (b *Bed) CgroupParent() string { return b.cgroupParent }

// CrictlPath is the crictl binary the bed runs (built by hack/testbed), for
// pointing it at other CRI sockets.
func (b *Bed) CrictlPath() string { return b.crictl }

// LogPath is containerd's log file.
func (b *Bed) LogPath() string { return filepath.Join(b.Dir(), "containerd.log") }

func (b *Bed) socket() string { return filepath.Join(b.Dir(), "containerd.sock") }
