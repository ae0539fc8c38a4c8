//go:build linux

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	dto "github.com/prometheus/client_model/go"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/probelet/probelet/internal/procusage"
	"github.com/probelet/probelet/probespec"
)

// webhookConfig is the MutatingWebhookConfiguration the replicas' leader
// keeps the caBundle of; it calls the first replica by URL (no Service:
// nothing routes one here).
const webhookConfig = "probelet-scale"

// replica is one probelet-controller process.
type replica struct {
	name, bin, log   string
	args             []string
	metrics, webhook string
	cmd              *exec.Cmd
}

func newReplica(bin, dir, kubeconfig, name string, grace time.Duration) (*replica, error) {
	metrics, err := freeAddr()
	if err != nil {
		return nil, err
	}
	webhook, err := freeAddr()
	if err != nil {
		return nil, err
	}
	r := &replica{name: name, bin: bin, log: filepath.Join(dir, name+".log"), metrics: metrics, webhook: webhook}
	r.args = []string{"--kubeconfig", kubeconfig, "--metrics-bind-address", metrics, "--grace-period", grace.String(),
		"--webhook-listen", webhook, "--webhook-cert-hosts", "127.0.0.1", "--webhook-config", webhookConfig}
	return r, nil
}

// start runs the replica, its log appended to r.log.
func (r *replica) start() error {
	out, err := os.OpenFile(r.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer out.Close()
	r.cmd = exec.Command(r.bin, r.args...)
	r.cmd.Stdout, r.cmd.Stderr = out, out
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return r.cmd.Start()
}

func (r *replica) pid() int { return r.cmd.Process.Pid }

// stop ends the replica with sig and waits for it.
func (r *replica) stop(sig syscall.Signal) {
	if r.cmd == nil || r.cmd.Process == nil {
		return
	}
	_ = r.cmd.Process.Signal(sig)
	_ = r.cmd.Wait()
	r.cmd = nil
}

// logged returns the time of the first log line with message msg at or
// after from (zap's "ts", seconds since the epoch).
func (r *replica) logged(msg string, from time.Time) (time.Time, bool) {
	f, err := os.Open(r.log)
	if err != nil {
		return time.Time{}, false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		var line struct {
			TS  float64 `json:"ts"`
			Msg string  `json:"msg"`
		}
		if json.Unmarshal(s.Bytes(), &line) != nil || line.Msg != msg {
			continue
		}
		at := time.Unix(0, int64(line.TS*1e9))
		if !at.Before(from) {
			return at, true
		}
	}
	return time.Time{}, false
}

// scrape reads the replica's /metrics.
func (r *replica) scrape(ctx context.Context) (map[string]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+r.metrics+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, err
	}
	return parseMetrics(b)
}

// apiCalls is the replica's probelet_controller_api_requests_total by
// "verb resource".
func (r *replica) apiCalls(ctx context.Context) (map[string]int64, error) {
	fams, err := r.scrape(ctx)
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	if f := fams["probelet_controller_api_requests_total"]; f != nil {
		for _, m := range f.Metric {
			var verb, res string
			for _, l := range m.Label {
				switch l.GetName() {
				case "verb":
					verb = l.GetValue()
				case "resource":
					res = l.GetValue()
				}
			}
			out[verb+" "+res] = int64(m.Counter.GetValue())
		}
	}
	return out, nil
}

// waitLogged waits for a log line of any of rs with message msg at or
// after from; it returns the replica and the line's time.
func waitLogged(ctx context.Context, rs []*replica, msg string, from time.Time, limit time.Duration) (*replica, time.Time, error) {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		for _, r := range rs {
			if r.cmd == nil {
				continue
			}
			if at, ok := r.logged(msg, from); ok {
				return r, at, nil
			}
		}
		if !sleep(ctx, 100*time.Millisecond) {
			return nil, time.Time{}, ctx.Err()
		}
	}
	return nil, time.Time{}, fmt.Errorf("no replica logged %q within %s", msg, limit)
}

// createWebhookConfig registers the webhook for namespaces labelled
// managed, calling url; the leader fills in its caBundle.
func createWebhookConfig(ctx context.Context, admin kubernetes.Interface, url string) error {
	none := admissionregistrationv1.SideEffectClassNone
	ignore := admissionregistrationv1.Ignore
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: webhookConfig},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "namespaces.probelet.io", AdmissionReviewVersions: []string{"v1"},
			SideEffects: &none, FailurePolicy: &ignore, TimeoutSeconds: ptr.To[int32](2),
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To(url)},
			Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{probespec.LabelProbes: probespec.LabelManaged}}}}}
	_, err := admin.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, cfg, metav1.CreateOptions{})
	return err
}

// caBundleSet waits until the leader wrote the webhook's caBundle.
func caBundleSet(ctx context.Context, admin kubernetes.Interface, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		cfg, err := admin.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, webhookConfig, metav1.GetOptions{})
		if err == nil && len(cfg.Webhooks[0].ClientConfig.CABundle) > 0 {
			return nil
		}
		if !sleep(ctx, 200*time.Millisecond) {
			return ctx.Err()
		}
	}
	return fmt.Errorf("the webhook's caBundle was not written within %s", limit)
}

// freeAddr is a loopback address free now.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// usage is a process's CPU time and resident memory.
type usage struct {
	cpu time.Duration
	rss int64 // bytes
}

// usageOf reads the process's CPU time and resident memory.
func usageOf(pid int) (usage, error) {
	cpu, err := procusage.CPUTime(pid)
	if err != nil {
		return usage{}, err
	}
	rss, err := procusage.RSS(pid)
	return usage{cpu: cpu, rss: rss}, err
}

// sampler follows a process's usage: CPU over the window, peak RSS.
type sampler struct {
	first    usage
	last     usage
	peak     int64
	from, to time.Time
	cancel   context.CancelFunc
	done     chan struct{}
}

// sample follows pid every 250 ms until end is called.
func sample(ctx context.Context, pid int) *sampler {
	ctx, cancel := context.WithCancel(ctx)
	s := &sampler{done: make(chan struct{}), from: time.Now(), cancel: cancel}
	s.first, _ = usageOf(pid)
	s.last, s.peak, s.to = s.first, s.first.rss, s.from
	go func() {
		defer close(s.done)
		for sleep(ctx, 250*time.Millisecond) {
			u, err := usageOf(pid)
			if err != nil {
				return
			}
			s.last, s.to = u, time.Now()
			s.peak = max(s.peak, u.rss)
		}
	}()
	return s
}

// end stops the sampling; the figures are final after it.
func (s *sampler) end() *sampler {
	s.cancel()
	<-s.done
	return s
}

// cores is the CPU the process used over the sampled window, in cores.
func (s *sampler) cores() float64 {
	if !s.to.After(s.from) {
		return 0
	}
	return float64(s.last.cpu-s.first.cpu) / float64(s.to.Sub(s.from))
}
