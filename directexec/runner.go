package directexec

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sync/semaphore"
	"k8s.io/utils/clock"

	"github.com/probelet/probelet/prober/probe/execprobe"
)

const (
	// DefaultStateDir is containerd's state directory (its `state`
	// setting); the bundles are under io.containerd.runtime.v2.task.
	DefaultStateDir = "/run/containerd"
	// HelperName is the helper's file name; by default it sits next to
	// the probelet binary.
	HelperName = "probelet-exec"
	// helperProtocol is the version `probelet-exec version` must print.
	helperProtocol = "probelet-exec 2"
	// compileTimeout bounds compiling one container's seccomp profile.
	compileTimeout = 10 * time.Second
	// statusGrace is how long after the probe's timeout the helper may
	// take to kill and reap the command before probelet gives up on it.
	statusGrace = 5 * time.Second
)

// errNotRunning: the container's init process is gone, as the runtime
// would say.
var errNotRunning = errors.New("container is not running")

// errPaused: the container's cgroups are frozen; runc's exec refuses with
// these words (ExecSync returns them wrapped in the runtime's error).
var errPaused = errors.New("cannot exec in a paused container")

// errHelperLost: the helper's process for a probe ended (crashed, was
// killed) or hung without writing the probe's status.
var errHelperLost = errors.New("the exec helper gave no status")

// lostLogEvery is how often a container's lost probes are logged: a
// command that kills the helper on each run must not flood the log.
const lostLogEvery = time.Minute

// Runner runs exec probes directly, falling back to another runner (CRI
// ExecSync) for containers it cannot run them in exactly as the runtime
// would. It implements execprobe.Runner.
type Runner struct {
	maxOutput int
	// replyLimit and budget are WithOutputLimits': 0 and nil for none.
	replyLimit int
	budget     *semaphore.Weighted
	budgetSize int64
	helper     string
	helperErr  error
	state      *stateDir
	procRoot   string
	fallback   execprobe.Runner
	log        *zap.Logger
	metrics    *Metrics
	lastCap    uint
	srv        *server

	mountsMu sync.Mutex
	cgMounts []cgroupMount

	mu      sync.Mutex
	entries map[string]*entry
	logged  map[string]map[string]bool // container → fallback reasons logged
	lost    map[string]time.Time       // container → when a lost probe was last logged
}

var _ execprobe.Runner = (*Runner)(nil)

// entry is one container's profile, built once by the first probe.
type entry struct {
	ready chan struct{}
	prof  *profile
	err   error
}

// Option configures a Runner.
type Option func(*Runner) error

// WithHelper sets the helper binary (default: probelet-exec next to the
// running executable).
func WithHelper(path string) Option {
	return func(r *Runner) error {
		if !filepath.IsAbs(path) {
			return fmt.Errorf("directexec: helper %q is not an absolute path", path)
		}
		r.helper = path
		return nil
	}
}

// WithStateDir sets containerd's state directory (default /run/containerd).
func WithStateDir(dir string) Option {
	return func(r *Runner) error {
		if !filepath.IsAbs(dir) {
			return fmt.Errorf("directexec: state dir %q is not an absolute path", dir)
		}
		r.state.dir = dir
		return nil
	}
}

// WithStateLearner makes the runner ask learn for containerd's state
// directory again whenever the one it has holds no bundles (a runtime that
// was down when the runner started, or moved), at most every few seconds.
// learn wrapping runtimestate.ErrCRIO sends every exec to the fallback
// (reason runtime). Without it the directory is fixed (--runtime-state-dir).
func WithStateLearner(learn func(context.Context) (string, error)) Option {
	return func(r *Runner) error {
		if learn == nil {
			return errors.New("directexec: nil state learner")
		}
		r.state.learn = learn
		return nil
	}
}

// WithLogger sets the logger.
func WithLogger(l *zap.Logger) Option {
	return func(r *Runner) error {
		if l == nil {
			return errors.New("directexec: nil logger")
		}
		r.log = l
		return nil
	}
}

// WithMaxOutput sets how much of each of stdout and stderr is kept (the
// rest is read and dropped): by default the probe's 10 KiB; the CRI proxy
// keeps what containerd's ExecSync keeps, 16 MiB.
func WithMaxOutput(n int) Option {
	return func(r *Runner) error {
		if n <= 0 {
			return fmt.Errorf("directexec: max output %d must be positive", n)
		}
		r.maxOutput = n
		return nil
	}
}

// WithMetrics sets the series the runner counts in (registered by the caller).
func WithMetrics(m *Metrics) Option {
	return func(r *Runner) error {
		if m == nil {
			return errors.New("directexec: nil metrics")
		}
		r.metrics = m
		return nil
	}
}

// New returns a runner that falls back to fallback. A helper that is
// missing or of another version is not an error here: every probe then
// goes to fallback, counted under reason "helper" and logged once.
func New(fallback execprobe.Runner, opts ...Option) (*Runner, error) {
	if fallback == nil {
		return nil, errors.New("directexec: nil fallback runner")
	}
	r := &Runner{
		state: &stateDir{dir: DefaultStateDir, clock: clock.RealClock{}}, procRoot: "/proc", fallback: fallback, maxOutput: maxOutput,
		log: zap.NewNop(), metrics: NewMetrics(),
		entries: map[string]*entry{}, logged: map[string]map[string]bool{}, lost: map[string]time.Time{},
	}
	for _, o := range opts {
		if err := o(r); err != nil {
			return nil, err
		}
	}
	r.state.log = r.log
	if r.helper == "" {
		r.helper, r.helperErr = defaultHelper()
	}
	if r.helperErr == nil {
		r.helperErr = checkHelper(r.helper)
	}
	if r.helperErr != nil {
		r.log.Warn("Exec probes go through the runtime: the direct exec helper is not usable",
			zap.String("helper", r.helper), zap.Error(r.helperErr))
	}
	r.lastCap = readLastCap(r.procRoot)
	r.refreshMounts()
	r.srv = newServer(r.helper, r.log)
	return r, nil
}

// Close stops the helper; probes still running finish.
func (r *Runner) Close() error {
	r.srv.close()
	return nil
}

// defaultHelper is probelet-exec next to the running executable.
func defaultHelper() (string, error) {
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	return filepath.Join(filepath.Dir(self), HelperName), nil
}

// checkHelper runs `probelet-exec version`.
func checkHelper(path string) error {
	out, err := exec.Command(path, "version").Output()
	if err != nil {
		return err
	}
	if v := strings.TrimSpace(string(out)); v != helperProtocol {
		return fmt.Errorf("helper speaks %q, want %q", v, helperProtocol)
	}
	return nil
}

// readLastCap is the kernel's highest capability number (runc ignores
// capabilities above it).
func readLastCap(procRoot string) uint {
	b, err := os.ReadFile(filepath.Join(procRoot, "sys/kernel/cap_last_cap"))
	if err != nil {
		return 40
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 8)
	if err != nil {
		return 40
	}
	return uint(n)
}

func (r *Runner) mounts() []cgroupMount {
	r.mountsMu.Lock()
	defer r.mountsMu.Unlock()
	return r.cgMounts
}

func (r *Runner) refreshMounts() {
	b, err := os.ReadFile(filepath.Join(r.procRoot, "self/mountinfo"))
	if err != nil {
		r.log.Warn("Cannot read this process's mounts; exec probes go through the runtime", zap.Error(err))
	}
	m := parseCgroupMounts(b)
	r.mountsMu.Lock()
	r.cgMounts = m
	r.mountsMu.Unlock()
}

// ExecSync runs cmd in the container like CRI ExecSync: a non-zero exit
// code is no error, a command outliving timeout is an error wrapping
// execprobe.ErrTimeout, a container not running (or exiting during the
// command) is an error. Containers the helper cannot serve exactly as the
// runtime go to the fallback runner.
func (r *Runner) ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) ([]byte, []byte, int32, error) {
	out, err := r.Exec(ctx, containerID, cmd, timeout)
	if err != nil {
		return nil, nil, 0, err
	}
	out.Release()
	return out.Stdout, out.Stderr, out.ExitCode, nil
}

// Exec is ExecSync whose answer holds its share of the output budget (see
// WithOutputLimits) until the caller releases it, once done with the bytes.
// An output past the reply limit is an *OutputTooLargeError.
func (r *Runner) Exec(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (*Output, error) {
	if r.helperErr != nil {
		return r.fallBack(ctx, containerID, unsupportedf(reasonHelper, "%v", r.helperErr), cmd, timeout)
	}
	p, err := r.profile(ctx, containerID)
	var u *unsupported
	switch {
	case errors.As(err, &u):
		return r.fallBack(ctx, containerID, u, cmd, timeout)
	case err != nil:
		return nil, fmt.Errorf("exec in container %s: %w", containerID, err)
	}
	res, err := r.run(ctx, p, cmd, timeout)
	switch {
	case errors.As(err, &u):
		return r.fallBack(ctx, containerID, u, cmd, timeout)
	case errors.Is(err, errNotRunning):
		r.Forget(containerID)
		return nil, fmt.Errorf("exec in container %s: %w", containerID, err)
	case errors.Is(err, errHelperLost):
		r.sayLost(containerID, cmd, err)
		return nil, fmt.Errorf("exec in container %s: %w", containerID, err)
	case err != nil:
		return nil, fmt.Errorf("exec in container %s: %w", containerID, err)
	}
	r.metrics.runs.Inc()
	return &Output{Stdout: res.stdout, Stderr: res.stderr, ExitCode: res.code, budget: r.budget, held: res.held}, nil
}

// Forget drops what the runner keeps about a container (its profile and
// compiled seccomp filter); call it when the container is removed.
func (r *Runner) Forget(containerID string) {
	r.mu.Lock()
	delete(r.entries, containerID)
	delete(r.logged, containerID)
	delete(r.lost, containerID)
	r.mu.Unlock()
}

// profile returns the container's profile, built by the first caller
// while the others wait. A container that is not running is not kept.
func (r *Runner) profile(ctx context.Context, id string) (*profile, error) {
	r.mu.Lock()
	e, ok := r.entries[id]
	if !ok {
		e = &entry{ready: make(chan struct{})}
		r.entries[id] = e
	}
	r.mu.Unlock()
	if ok {
		select {
		case <-e.ready:
			return e.prof, e.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), compileTimeout)
	e.prof, e.err = r.buildProfile(bctx, id)
	cancel()
	close(e.ready)
	var u *unsupported
	if errors.Is(e.err, errNotRunning) || (errors.As(e.err, &u) && u.reason == reasonState) {
		r.Forget(id) // not kept: the directory may be learned by the next exec
	}
	return e.prof, e.err
}

// sayLost counts a probe the helper lost and logs it, at most every
// lostLogEvery per container: the probe's result is only an error.
func (r *Runner) sayLost(id string, cmd []string, err error) {
	r.metrics.lost.Inc()
	now := time.Now()
	r.mu.Lock()
	last, seen := r.lost[id]
	say := !seen || now.Sub(last) >= lostLogEvery
	if say {
		r.lost[id] = now
	}
	r.mu.Unlock()
	if say {
		r.log.Warn("The exec helper's process for a probe ended without its status (crashed or killed); the probe's result is an error",
			zap.String("containerID", id), zap.Strings("command", cmd), zap.Error(err))
	}
}

// fallBack runs the probe through the runtime, counting why and logging it
// once per container and reason.
func (r *Runner) fallBack(ctx context.Context, id string, u *unsupported, cmd []string, timeout time.Duration) (*Output, error) {
	r.metrics.fallbacks.WithLabelValues(u.reason).Inc()
	r.mu.Lock()
	first := !r.logged[id][u.reason] && u.reason != reasonHelper // New logged that one
	if first {
		if r.logged[id] == nil {
			r.logged[id] = map[string]bool{}
		}
		r.logged[id][u.reason] = true
	}
	r.mu.Unlock()
	if first {
		r.log.Info("Exec probes of this container go through the runtime",
			zap.String("containerID", id), zap.String("reason", u.reason), zap.String("detail", u.detail))
	}
	stdout, stderr, code, err := r.fallback.ExecSync(ctx, id, cmd, timeout)
	if err != nil {
		return nil, err
	}
	return &Output{Stdout: stdout, Stderr: stderr, ExitCode: code}, nil
}
