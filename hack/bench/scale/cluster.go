//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// controlPlane is a private etcd and kube-apiserver from hack/cluster (its
// kube-controller-manager runs the service account controllers only: no
// node lifecycle controller or pod GC to act on nodes nobody runs).
type controlPlane struct {
	root, dir string
	etcdURL   string
	cfg       *rest.Config
	admin     kubernetes.Interface
}

// controllers kube-controller-manager runs: up.sh waits for the default
// ServiceAccount.
const controllers = "serviceaccount,serviceaccount-token"

func startControlPlane(ctx context.Context, root string) (_ *controlPlane, err error) {
	dir, err := os.MkdirTemp("", "pkc-scale-")
	if err != nil {
		return nil, err
	}
	cp := &controlPlane{root: root, dir: dir}
	defer func() {
		if err != nil {
			cp.stop()
		}
	}()
	if out, err := hack(ctx, root, "cluster/up.sh", "--controllers", controllers, dir); err != nil {
		return nil, fmt.Errorf("cluster/up.sh: %w\n%s", err, out)
	}
	// hack/lib's gc removes a directory whose owner is gone: this process
	// (up.sh wants the directory empty or its own, so it comes after).
	if err := os.WriteFile(filepath.Join(dir, "owner"), ownerLine(), 0o644); err != nil {
		return nil, err
	}
	env, err := os.ReadFile(filepath.Join(dir, "cluster.env"))
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(string(env), "\n") {
		if port, ok := strings.CutPrefix(line, "ETCD_PORT="); ok {
			cp.etcdURL = "http://127.0.0.1:" + port
		}
	}
	if cp.cfg, err = clientcmd.BuildConfigFromFlags("", cp.kubeconfig()); err != nil {
		return nil, err
	}
	// One process speaks for thousands of nodes: no client-side limit.
	cp.cfg.QPS, cp.cfg.Burst = -1, 0
	if cp.admin, err = kubernetes.NewForConfig(cp.cfg); err != nil {
		return nil, err
	}
	return cp, nil
}

func (cp *controlPlane) kubeconfig() string { return filepath.Join(cp.dir, "admin.kubeconfig") }

func (cp *controlPlane) stop() {
	if out, err := hack(context.Background(), cp.root, "cluster/down.sh", cp.dir); err != nil {
		fmt.Fprintf(os.Stderr, "scale bench: cluster/down.sh %s: %v\n%s", cp.dir, err, out)
	}
}

// pid is a component's process (kube-apiserver, etcd).
func (cp *controlPlane) pid(component string) int {
	b, _ := os.ReadFile(filepath.Join(cp.dir, component+".pid"))
	pid, _ := strconv.Atoi(strings.Fields(string(b) + " 0")[0])
	return pid
}

// apiserverMetrics reads the API server's /metrics.
func (cp *controlPlane) apiserverMetrics(ctx context.Context) (map[string]*dto.MetricFamily, error) {
	body, err := cp.admin.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	return parseMetrics(body)
}

// etcdCall posts a JSON request to etcd's gRPC gateway.
func (cp *controlPlane) etcdCall(ctx context.Context, path string, req, resp any) error {
	body, _ := json.Marshal(req)
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute) // a defragmentation of a large database
	defer cancel()
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, cp.etcdURL+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(r)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("etcd %s: %s", path, res.Status)
	}
	if resp == nil {
		return nil
	}
	return json.NewDecoder(res.Body).Decode(resp)
}

// etcdCompactedSize compacts etcd's history to now and defragments it,
// then reads the database size: what the objects themselves take, not
// their past revisions (the API server compacts every 5 minutes anyway).
func (cp *controlPlane) etcdCompactedSize(ctx context.Context) (int64, error) {
	var rng struct {
		Header struct {
			Revision string `json:"revision"`
		} `json:"header"`
	}
	if err := cp.etcdCall(ctx, "/v3/kv/range", map[string]any{"key": "AA==", "keys_only": true}, &rng); err != nil {
		return 0, err
	}
	if err := cp.etcdCall(ctx, "/v3/kv/compaction", map[string]any{"revision": rng.Header.Revision, "physical": true}, nil); err != nil {
		return 0, err
	}
	if err := cp.etcdCall(ctx, "/v3/maintenance/defragment", map[string]any{}, nil); err != nil {
		return 0, err
	}
	res, err := http.Get(cp.etcdURL + "/metrics")
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(res.Body); err != nil {
		return 0, err
	}
	fams, err := parseMetrics(buf.Bytes())
	if err != nil {
		return 0, err
	}
	return int64(gauge(fams, "etcd_mvcc_db_total_size_in_bytes")), nil
}

func parseMetrics(b []byte) (map[string]*dto.MetricFamily, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(bytes.NewReader(b))
}

// gauge is the sum of a family's gauge or counter values whose labels
// include want.
func gauge(fams map[string]*dto.MetricFamily, name string, want ...string) float64 {
	f := fams[name]
	if f == nil {
		return 0
	}
	sum := 0.0
	for _, m := range f.Metric {
		if !hasLabels(m, want) {
			continue
		}
		switch {
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Untyped != nil:
			sum += m.Untyped.GetValue()
		}
	}
	return sum
}

// hasLabels reports whether m has each name=value pair of want.
func hasLabels(m *dto.Metric, want []string) bool {
	for i := 0; i+1 < len(want); i += 2 {
		found := false
		for _, l := range m.Label {
			if l.GetName() == want[i] && l.GetValue() == want[i+1] {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// hack runs hack/NAME.
func hack(ctx context.Context, root, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(root, "hack", name), args...)
	cmd.Dir = root
	return cmd.CombinedOutput()
}

// ownerLine is "PID STARTTIME" of this process, hack/lib's owner file.
func ownerLine() []byte {
	stat, _ := os.ReadFile("/proc/self/stat")
	s := string(stat)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	return fmt.Appendf(nil, "%d %s\n", os.Getpid(), fields[19])
}
