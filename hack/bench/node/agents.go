//go:build linux

package main

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/probelet/probelet/internal/testbed"
)

// kubelet is a standalone kubelet run by hack/cluster/kubelet.sh.
type kubelet struct {
	root, dir string
	readOnly  string // http://HOST:PORT of the read-only port
	manifests string
}

var _ agent = (*kubelet)(nil)

func startKubelet(ctx context.Context, root, bed string) (*kubelet, error) {
	dir, err := os.MkdirTemp("/tmp", "pkn-")
	if err != nil {
		return nil, err
	}
	k := &kubelet{root: root, dir: dir, manifests: filepath.Join(dir, "manifests")}
	if err := testbed.MarkOwned(dir, kubeletMarker); err != nil {
		return k, err
	}
	if _, err := script(ctx, root, "cluster/kubelet.sh", "up", "--bed", bed, "--node", "nodebench", dir); err != nil {
		return k, err
	}
	env, err := readEnvFile(filepath.Join(dir, "kubelet.env"))
	if err != nil {
		return k, err
	}
	k.readOnly = env["READONLY_URL"]
	return k, nil
}

func (k *kubelet) name() string { return "kubelet" }

func (k *kubelet) pid() (int, error) {
	data, err := os.ReadFile(filepath.Join(k.dir, "kubelet.pid"))
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || !testbed.Alive(pid) {
		return 0, fmt.Errorf("the kubelet is not running (pid file %q)", data)
	}
	return pid, nil
}

// probeCounts sums the kubelet's prober_probe_total (its /metrics/probes).
func (k *kubelet) probeCounts(ctx context.Context) (float64, float64, error) {
	mfs, err := scrape(ctx, k.readOnly+"/metrics/probes")
	if err != nil {
		return 0, 0, err
	}
	runs, bad := probeTotals(mfs)
	return runs, bad, nil
}

func (k *kubelet) stop(ctx context.Context) error {
	_, err := script(ctx, k.root, "cluster/kubelet.sh", "stop", k.dir)
	return err
}

func (k *kubelet) start(ctx context.Context) error {
	_, err := script(ctx, k.root, "cluster/kubelet.sh", "start", k.dir)
	return err
}

func (k *kubelet) down() error {
	_, err := script(context.Background(), k.root, "cluster/kubelet.sh", "down", k.dir)
	return err
}

// probelet is one run of the probelet daemon against the bed.
type probelet struct {
	cmd     *exec.Cmd
	done    chan error
	log     string
	metrics string // HOST:PORT
}

var _ agent = (*probelet)(nil)

var metricsAddr = regexp.MustCompile(`Serving /metrics and /healthz.*"address": ?"([^"]+)"`)

// startProbelet runs probelet with tcpMode, io and origin ("" for the
// node's) and waits until it is registered with containerd over NRI.
func (e *env) startProbelet(ctx context.Context, tcpMode, io, origin string) (*probelet, error) {
	logFile, err := os.CreateTemp(e.bed, "probelet-*.log")
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	p := &probelet{log: logFile.Name(), done: make(chan error, 1)}
	p.cmd = exec.Command(e.probelet, "--nri-socket", e.nriSocket(), "--runtime-endpoint", e.criEndpoint(),
		"--listen", "unix://"+filepath.Join(e.bed, "pl.sock"), "--metrics-bind-address", "127.0.0.1:0",
		"--tcp-mode", tcpMode, "--io", io, "--probe-origin", cmp.Or(origin, "node"),
		// A state directory like a node's, but in the bed: never the
		// host's /var/lib/probelet.
		"--state-dir", filepath.Join(e.bed, "probelet-state"))
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	p.cmd.Env = append(os.Environ(), e.c.env...)
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { p.done <- p.cmd.Wait() }()
	if err := p.waitReady(ctx); err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

func (p *probelet) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-p.done:
			p.done <- err
			return fmt.Errorf("probelet exited: %v; see %s", err, p.log)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if p.metrics == "" {
			if data, err := os.ReadFile(p.log); err == nil {
				if m := metricsAddr.FindSubmatch(data); m != nil {
					p.metrics = string(m[1])
				}
			}
			continue
		}
		mfs, err := scrape(ctx, "http://"+p.metrics+"/metrics")
		if err == nil && gaugeValue(mfs, "probelet_nri_connected") == 1 {
			return nil
		}
	}
	return fmt.Errorf("probelet not registered over NRI after 30s; see %s", p.log)
}

func (p *probelet) name() string { return "probelet" }

func (p *probelet) pid() (int, error) { return p.cmd.Process.Pid, nil }

func (p *probelet) probeCounts(ctx context.Context) (float64, float64, error) {
	mfs, err := p.scrape(ctx)
	if err != nil {
		return 0, 0, err
	}
	runs, bad := probeTotals(mfs)
	// Discarded runs (the prober itself failed) are runs too.
	errs := sum(mfs["probelet_probe_errors_total"], nil)
	return runs + errs, bad + errs, nil
}

func (p *probelet) scrape(ctx context.Context) (map[string]*dto.MetricFamily, error) {
	return scrape(ctx, "http://"+p.metrics+"/metrics")
}

// stop ends probelet with SIGTERM (SIGKILL after 10 s).
func (p *probelet) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		p.done <- err
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
	}
}

// scrape reads a Prometheus text endpoint.
func scrape(ctx context.Context, url string) (map[string]*dto.MetricFamily, error) {
	body, err := get(ctx, url)
	if err != nil {
		return nil, err
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(bytes.NewReader(body))
}

// probeTotals sums prober_probe_total, and its runs whose result was not
// "successful".
func probeTotals(mfs map[string]*dto.MetricFamily) (runs, bad float64) {
	mf := mfs["prober_probe_total"]
	runs = sum(mf, nil)
	bad = runs - sum(mf, map[string]string{"result": "successful"})
	return runs, bad
}

// sum adds the values of mf's counters (or gauges) whose labels include want.
func sum(mf *dto.MetricFamily, want map[string]string) float64 {
	if mf == nil {
		return 0
	}
	var total float64
	for _, m := range mf.GetMetric() {
		if !hasLabels(m, want) {
			continue
		}
		total += m.GetCounter().GetValue() + m.GetGauge().GetValue()
	}
	return total
}

// series counts mf's series whose labels include want.
func series(mf *dto.MetricFamily, want map[string]string) int {
	n := 0
	for _, m := range mf.GetMetric() {
		if hasLabels(m, want) {
			n++
		}
	}
	return n
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	found := 0
	for _, l := range m.GetLabel() {
		if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
			found++
		}
	}
	return found == len(want)
}

func gaugeValue(mfs map[string]*dto.MetricFamily, name string) float64 {
	return sum(mfs[name], nil)
}

// get fetches url's body.
func get(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	// No keep-alive: an idle connection is a goroutine (and timers) in the
	// agent under test.
	c := http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return io.ReadAll(resp.Body)
}
