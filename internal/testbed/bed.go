package testbed

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Image references the bed imports; RunPod uses BusyboxImage by default.
const (
	PauseImage   = "localhost/probelet/pause:testbed"
	BusyboxImage = "localhost/probelet/busybox:testbed"
)

const (
	defaultCache        = "/var/cache/probelet-testbed"
	defaultStartTimeout = 15 * time.Minute
	downTimeout         = 2 * time.Minute
	// maxBaseLen keeps DIR short: unix socket paths under it are limited to
	// 108 bytes, and up.sh refuses dirs over 80.
	maxBaseLen = 40
)

// Bed is one running containerd test bed. Its methods are safe for
// concurrent use.
type Bed struct {
	t            testing.TB
	dir          string
	scripts      string
	cacheDir     string
	startTimeout time.Duration
	crictl       string
	ctr          string
	bridge       string
	cgroupParent string

	mu      sync.Mutex
	pods    map[string]*podRecord
	seq     int
	stopped bool
}

// Start builds what is missing, starts a containerd test bed in a fresh
// directory and registers its teardown with t.Cleanup. It never returns on
// failure: the test is failed (or, without root outside CI, skipped).
func Start(t testing.TB, opts ...Option) *Bed {
	t.Helper()
	RequireRoot(t, "testbed: the containerd test bed")
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
	b := &Bed{t: t, cacheDir: defaultCache, startTimeout: defaultStartTimeout, pods: map[string]*podRecord{}}
	if c := os.Getenv("PROBELET_TESTBED_CACHE"); c != "" {
		b.cacheDir = c
	}
	for _, opt := range opts {
		if err := opt(b); err != nil {
			return nil, err
		}
	}
	if b.scripts == "" {
		dir, err := findScripts()
		if err != nil {
			return nil, err
		}
		b.scripts = dir
	}
	return b, nil
}

// up builds, picks a fresh directory and starts containerd in it.
func (b *Bed) up() error {
	if err := b.build(); err != nil {
		return err
	}
	base := shortTempBase()
	if _, err := b.script(downTimeout, "gc.sh", base); err != nil {
		b.t.Logf("testbed: removing abandoned beds: %v", err)
	}
	dir, err := os.MkdirTemp(base, "pbt-")
	if err != nil {
		return err
	}
	b.dir = dir
	// Registered before up.sh so a half-started bed is torn down too.
	b.t.Cleanup(b.cleanup)
	if err := markBed(dir); err != nil {
		return err
	}
	b.t.Logf("testbed: starting containerd in %s", dir)
	return b.startIn(dir)
}

// build runs build.sh, which prints where the binaries are.
func (b *Bed) build() error {
	out, err := b.script(b.startTimeout, "build.sh")
	if err != nil {
		return err
	}
	kv := keyValues(out)
	if b.crictl, b.ctr = kv["crictl"], kv["ctr"]; b.crictl == "" || b.ctr == "" {
		return fmt.Errorf("build.sh did not print crictl=PATH and ctr=PATH:\n%s", out)
	}
	return nil
}

// startIn runs up.sh and reads the network names it chose.
func (b *Bed) startIn(dir string) error {
	if _, err := b.script(b.startTimeout, "up.sh", dir); err != nil {
		return err
	}
	env, err := os.ReadFile(filepath.Join(dir, "testbed.env"))
	if err != nil {
		return err
	}
	kv := keyValues(env)
	b.bridge, b.cgroupParent = kv["BRIDGE"], kv["CGROUP_PARENT"]
	return nil
}

// shortTempBase is os.TempDir unless that is too long for socket paths.
func shortTempBase() string {
	if d := os.TempDir(); len(d) <= maxBaseLen {
		return d
	}
	return "/tmp"
}

// keyValues parses KEY=VALUE lines.
func keyValues(data []byte) map[string]string {
	kv := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			kv[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return kv
}

// cleanup is the t.Cleanup hook: it keeps a failed test's bed when asked,
// shows containerd's log on failure and tears the bed down.
func (b *Bed) cleanup() {
	b.mu.Lock()
	stopped := b.stopped
	b.mu.Unlock()
	if b.t.Failed() && !stopped {
		b.t.Logf("testbed: last lines of %s:\n%s", b.LogPath(), b.logTail(30))
		if os.Getenv("PROBELET_TESTBED_KEEP") == "1" {
			_ = os.Remove(filepath.Join(b.dir, ownerFile)) // kept beds are not gc.sh's to remove
			b.t.Logf("testbed: keeping %s; remove it with %s %s", b.dir, filepath.Join(b.scripts, "down.sh"), b.dir)
			return
		}
	}
	if err := b.Stop(); err != nil {
		b.t.Errorf("testbed: %v", err)
	}
}

func (b *Bed) logTail(n int) string {
	data, err := os.ReadFile(b.LogPath())
	if err != nil {
		return err.Error()
	}
	return tail(string(data), n)
}

// Stop tears the bed down: every pod, containerd, its shims and containers,
// mounts, cgroups, the bridge and the directory. Idempotent; Start
// registers it with t.Cleanup, so tests call it only to check the result.
func (b *Bed) Stop() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped || b.dir == "" {
		return nil
	}
	if _, err := b.script(downTimeout, "down.sh", b.dir); err != nil {
		return err
	}
	b.stopped = true
	return nil
}

// Dir is the bed's directory; every file of this containerd lives under it.
func (b *Bed) Dir() string { return b.dir }

// CRIEndpoint is containerd's CRI endpoint, unix://DIR/containerd.sock.
func (b *Bed) CRIEndpoint() string { return "unix://" + b.socket() }

// NRISocket is the path where containerd accepts NRI plugins.
func (b *Bed) NRISocket() string { return filepath.Join(b.dir, "nri.sock") }

// Bridge is the name of the bed's CNI bridge (created with the first pod).
func (b *Bed) Bridge() string { return b.bridge }

// CgroupParent is the cgroupfs parent of every pod of the bed.
func (b *Bed) CgroupParent() string { return b.cgroupParent }

// CrictlPath is the crictl binary the bed runs (built by hack/testbed), for
// pointing it at other CRI sockets.
func (b *Bed) CrictlPath() string { return b.crictl }

// LogPath is containerd's log file.
func (b *Bed) LogPath() string { return filepath.Join(b.dir, "containerd.log") }

func (b *Bed) socket() string { return filepath.Join(b.dir, "containerd.sock") }
