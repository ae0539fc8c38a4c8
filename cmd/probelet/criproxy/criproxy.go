// Package criproxy runs `probelet cri-proxy`: the kubelet's CRI endpoint
// (cri/proxy) as a small process of its own, apart from the prober daemon.
// Nothing in it reads what a pod author writes (annotations, probe output,
// HTTP answers): it forwards the kubelet's calls to containerd, answers
// relists from a memo of containerd's own answers and follows containerd's
// own event stream. So the prober can crash, be OOM-killed or restarted in
// a loop while every kubelet call goes through.
package criproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/probelet/probelet/cri/proxy"
	"github.com/probelet/probelet/directexec"
	"github.com/probelet/probelet/internal/endpoint"
	"github.com/probelet/probelet/internal/httpserve"
	"github.com/probelet/probelet/internal/logging"
	"github.com/probelet/probelet/internal/runtimestate"
	"github.com/probelet/probelet/quietio"
)

// verifySettle is how long shadow mode gives containerd's event to arrive
// before a differing cached answer counts as a mismatch: its events follow
// a change by milliseconds.
const verifySettle = time.Second

// Config is the proxy's configuration, from its flags.
type Config struct {
	// Listen is the kubelet's --container-runtime-endpoint, unix:///path;
	// a socket systemd passed for that path is used as it is.
	Listen string
	// RuntimeEndpoint is containerd's CRI socket.
	RuntimeEndpoint string
	// Verify turns on shadow mode.
	Verify bool
	// MetricsBindAddress serves /metrics and /healthz; empty: off.
	MetricsBindAddress string
	// IO is who does the proxy's runtime I/O: quiet (raw system calls) or
	// std (net) (--io).
	IO string
	// ExecMode is who runs ExecSync: "runtime" (forwarded) or "direct"
	// (the direct executor, forwarding what it does not serve).
	ExecMode string
	// RuntimeStateDir overrides containerd's state directory, and
	// ExecHelper the helper binary, for ExecMode direct.
	RuntimeStateDir, ExecHelper string
	// ExecOutputBudgetMiB bounds the output the ExecSync calls of
	// ExecMode direct hold at once (see directexec.WithOutputLimits).
	ExecOutputBudgetMiB int
	LogFormat, LogLevel string
}

// Default is the configuration without flags.
func Default() Config {
	return Config{RuntimeEndpoint: endpoint.Containerd, MetricsBindAddress: "127.0.0.1:9810", ExecMode: "runtime", IO: quietio.Quiet, ExecOutputBudgetMiB: defaultExecOutputBudgetMiB, LogFormat: "console", LogLevel: "info"}
}

// Validate names the flag at fault.
func (c Config) Validate() error {
	if _, err := endpoint.UnixPath(c.Listen); err != nil {
		return fmt.Errorf("--listen %w", err)
	}
	if _, err := endpoint.UnixPath(c.RuntimeEndpoint); err != nil {
		return fmt.Errorf("--runtime-endpoint %w", err)
	}
	if endpoint.Same(c.Listen, c.RuntimeEndpoint) {
		return errors.New("--listen is the runtime's own endpoint (--runtime-endpoint)")
	}
	if c.IO != quietio.Quiet && c.IO != quietio.Std {
		return fmt.Errorf("--io %q: want %s or %s", c.IO, quietio.Quiet, quietio.Std)
	}
	if c.ExecMode != "runtime" && c.ExecMode != "direct" {
		return fmt.Errorf("--exec-mode %q: want runtime or direct", c.ExecMode)
	}
	if c.ExecOutputBudgetMiB < 1 {
		return fmt.Errorf("--exec-output-budget-mib %d: want at least 1", c.ExecOutputBudgetMiB)
	}
	for flag, p := range map[string]string{"--runtime-state-dir": c.RuntimeStateDir, "--exec-helper": c.ExecHelper} {
		if p != "" && !filepath.IsAbs(p) {
			return fmt.Errorf("%s %q is not an absolute path", flag, p)
		}
	}
	if c.MetricsBindAddress != "" {
		if _, _, err := net.SplitHostPort(c.MetricsBindAddress); err != nil {
			return fmt.Errorf("--metrics-bind-address %q is not HOST:PORT: %w", c.MetricsBindAddress, err)
		}
	}
	return nil
}

// Run serves the proxy until ctx ends, then drains the calls in flight.
func Run(ctx context.Context, cfg Config, stderr io.Writer) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if err := quietio.Set(cfg.IO); err != nil {
		return err
	}
	log, err := logging.New(stderr, cfg.LogFormat, cfg.LogLevel)
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	opts := []proxy.Option{proxy.WithLogger(log), proxy.WithRegisterer(reg)}
	if cfg.Verify {
		opts = append(opts, proxy.WithVerify(verifySettle))
	}
	// The executor learns the state directory through the proxy's
	// runtime connection, and the proxy calls the executor: bound late,
	// before serving starts.
	late := &lateExec{}
	if cfg.ExecMode == "direct" {
		opts = append(opts, proxy.WithDirectExec(late))
	}
	p, err := proxy.New(cfg.RuntimeEndpoint, opts...)
	if err != nil {
		return err
	}
	defer p.Close()
	if cfg.ExecMode == "direct" {
		direct, err := newDirectExec(ctx, cfg, p, reg, log)
		if err != nil {
			return err
		}
		defer direct.Close()
		late.r = direct
	}
	return serve(ctx, cfg, p, reg, log)
}

// serve listens on cfg.Listen and serves p (and /metrics) until ctx ends.
func serve(ctx context.Context, cfg Config, p *proxy.Proxy, reg *prometheus.Registry, log *zap.Logger) error {
	l, release, activated, err := proxy.Listen(cfg.Listen)
	if err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	defer release()
	log.Info("CRI proxy listening", zap.String("listen", cfg.Listen), zap.String("runtime", cfg.RuntimeEndpoint),
		zap.Bool("socketActivated", activated), zap.Bool("verify", cfg.Verify), zap.String("execMode", cfg.ExecMode), zap.String("io", cfg.IO))

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	metricsDone := make(chan error, 1)
	if cfg.MetricsBindAddress != "" {
		ml, err := net.Listen("tcp", cfg.MetricsBindAddress)
		if err != nil {
			return fmt.Errorf("--metrics-bind-address: %w", err)
		}
		log.Info("Serving /metrics and /healthz", zap.String("address", ml.Addr().String()))
		srv := httpserve.New(handler(reg))
		go func() { metricsDone <- srv.Serve(ml) }()
		defer func() {
			shutdown, stop := context.WithTimeout(context.Background(), time.Second)
			defer stop()
			_ = srv.Shutdown(shutdown)
		}()
	}
	served := make(chan error, 1)
	go func() { served <- p.Serve(ctx, l) }()
	select {
	case err := <-served:
		if err != nil {
			return fmt.Errorf("serving the CRI proxy: %w", err)
		}
		return nil
	case err := <-metricsDone:
		cancel()
		<-served
		return fmt.Errorf("serving metrics: %w", err)
	}
}

// handler serves /metrics and /healthz: 200 while the process serves.
func handler(reg *prometheus.Registry) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	return mux
}

// newDirectExec makes the direct executor of --exec-mode direct. It keeps
// what containerd's ExecSync keeps (16 MiB of each stream), and whatever it
// does not serve exactly it hands back to the proxy (proxy.ErrForward),
// which forwards the kubelet's own request to containerd.
func newDirectExec(ctx context.Context, cfg Config, p *proxy.Proxy, reg prometheus.Registerer, log *zap.Logger) (*directexec.Runner, error) {
	m := directexec.NewMetrics()
	if err := m.Register(reg); err != nil {
		return nil, fmt.Errorf("--exec-mode direct: %w", err)
	}
	dir := runtimestate.Resolve(ctx, cfg.RuntimeStateDir, directexec.DefaultStateDir, p.RuntimeStateDir, log)
	opts := []directexec.Option{
		directexec.WithStateDir(dir), directexec.WithLogger(log.Named("exec")), directexec.WithMetrics(m),
		directexec.WithMaxOutput(execSyncMaxOutput),
		directexec.WithOutputLimits(proxy.MaxReplySize, int64(cfg.ExecOutputBudgetMiB)<<20),
	}
	if cfg.RuntimeStateDir == "" { // learned: again whenever it holds no bundles
		opts = append(opts, directexec.WithStateLearner(p.RuntimeStateDir))
	}
	if cfg.ExecHelper != "" {
		opts = append(opts, directexec.WithHelper(cfg.ExecHelper))
	}
	r, err := directexec.New(forwarder{}, opts...)
	if err != nil {
		return nil, fmt.Errorf("--exec-mode direct: %w", err)
	}
	return r, nil
}

const (
	// execSyncMaxOutput is what containerd's ExecSync keeps of each stream.
	execSyncMaxOutput = 16 << 20
	// defaultExecOutputBudgetMiB leaves the proxy's unit (MemoryMax 256M,
	// GOMEMLIMIT 192MiB) room for its own ~30 MiB, a growing buffer's
	// spare capacity (up to as much again) and the Go heap's headroom:
	// four replies at the kubelet's 16 MiB limit at once, every smaller
	// answer's first 64 KiB outside it.
	defaultExecOutputBudgetMiB = 64
)

// forwarder is the direct executor's fallback in the proxy: the call goes
// back to the proxy, which forwards the kubelet's request unchanged.
type forwarder struct{}

func (forwarder) ExecSync(context.Context, string, []string, time.Duration) ([]byte, []byte, int32, error) {
	return nil, nil, 0, proxy.ErrForward
}

// lateExec is the proxy's exec runner before the executor exists: until
// then (never once serving starts) every call is forwarded.
type lateExec struct{ r *directexec.Runner }

func (l *lateExec) Exec(ctx context.Context, id string, cmd []string, timeout time.Duration) (*directexec.Output, error) {
	if l.r == nil {
		return nil, proxy.ErrForward
	}
	return l.r.Exec(ctx, id, cmd, timeout)
}

func (l *lateExec) Forget(id string) {
	if l.r != nil {
		l.r.Forget(id)
	}
}
