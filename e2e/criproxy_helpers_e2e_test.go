//go:build e2e

package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/probelet/probelet/internal/cluster"
	"github.com/probelet/probelet/internal/testbed"
)

// proxyEndpoint is where the tests put the CRI proxy: in the bed's
// directory, like its containerd socket.
func proxyEndpoint(bed *testbed.Bed) string { return "unix://" + filepath.Join(bed.Dir(), "cri.sock") }

// startCRIProxy starts `probelet cri-proxy` in front of bed's containerd
// on proxyEndpoint(bed), with metrics on a free port, JSON logs and extra
// flags, and waits until it serves /healthz. It is stopped when the test
// ends.
func startCRIProxy(t *testing.T, bed *testbed.Bed, extra ...string) *daemon {
	t.Helper()
	return startCRIProxyUnder(t, bed, nil, extra...)
}

// startCRIProxyUnder is startCRIProxy with the proxy run under the command
// wrap (inCgroup: in a memory cgroup, as its unit).
func startCRIProxyUnder(t *testing.T, bed *testbed.Bed, wrap []string, extra ...string) *daemon {
	t.Helper()
	d := &daemon{t: t, bed: bed, name: "cri-proxy", wrap: wrap}
	d.args = append([]string{"cri-proxy",
		"--listen", proxyEndpoint(bed),
		"--runtime-endpoint", bed.CRIEndpoint(),
		"--metrics-bind-address", "127.0.0.1:0",
		"--log-format", "json",
	}, extra...)
	t.Cleanup(d.cleanup)
	d.start()
	return d
}

// crictlAt runs the bed's unmodified crictl against endpoint (runtime and
// image service) and returns its stdout.
func crictlAt(bed *testbed.Bed, endpoint string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	full := append([]string{"--config", filepath.Join(bed.Dir(), "crictl.yaml"),
		"--runtime-endpoint", endpoint, "--image-endpoint", endpoint}, args...)
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bed.CrictlPath(), full...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("crictl %s at %s: %w: %s", strings.Join(args, " "), endpoint, err, stderr.String())
	}
	return stdout.Bytes(), nil
}

// criClient is a CRI client on endpoint, closed when the test ends.
func criClient(t *testing.T, endpoint string) runtimeapi.RuntimeServiceClient {
	t.Helper()
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return runtimeapi.NewRuntimeServiceClient(conn)
}

// kubeletPods reads the standalone kubelet's /pods.
func kubeletPods(k *cluster.Kubelet) ([]corev1.Pod, error) {
	c := http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil}}
	resp, err := c.Get(k.ReadOnlyURL() + "/pods")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	var list corev1.PodList
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// kubeletGet reads a path of the kubelet's read-only port.
func kubeletGet(k *cluster.Kubelet, path string) (string, error) {
	c := http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil}}
	resp, err := c.Get(k.ReadOnlyURL() + path)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return string(body), err
}

// containerID strips the runtime prefix of a pod status's container ID.
func containerID(s corev1.ContainerStatus) string {
	_, id, _ := strings.Cut(s.ContainerID, "://")
	return id
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// addStaticPods adds n static pods to k, named format with their index,
// each a sleeping busybox container with probes.
func addStaticPods(t *testing.T, k *cluster.Kubelet, format string, n int, probes string) {
	t.Helper()
	for i := range n {
		name := fmt.Sprintf(format, i)
		if err := k.AddStaticPod(name, staticPod(name, "exec sleep 3600", probes)); err != nil {
			t.Fatal(err)
		}
	}
}

// staticPod is a static pod manifest with one busybox container.
func staticPod(name, script string, extra string) []byte {
	return fmt.Appendf(nil, `apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: default
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: main
    image: %s
    imagePullPolicy: Never
    command: [sh, -c, %q]
%s`, name, testbed.BusyboxImage, script, extra)
}

// sumWhere adds up the series of name whose labels include labels.
func (d *daemon) sumWhere(name string, labels map[string]string) float64 {
	d.t.Helper()
	mfs, err := d.scrape()
	if err != nil {
		d.t.Fatal(err)
	}
	var total float64
	for _, m := range mfs[name].GetMetric() {
		if hasLabels(m, labels) {
			total += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return total
}

// kubeletCounterSum adds up every series of a counter on the kubelet's
// /metrics (0 when it has none).
func kubeletCounterSum(t *testing.T, k *cluster.Kubelet, name string) float64 {
	t.Helper()
	text, err := kubeletGet(k, "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, name+" ") && !strings.HasPrefix(line, name+"{") {
			continue
		}
		var f float64
		if _, err := fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &f); err == nil {
			sum += f
		}
	}
	return sum
}

// kubeletCounter is the value of a counter on the kubelet's /metrics (0
// when absent).
func kubeletCounter(t *testing.T, k *cluster.Kubelet, name string) float64 {
	t.Helper()
	text, err := kubeletGet(k, "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			var f float64
			if _, err := fmt.Sscan(v, &f); err == nil {
				return f
			}
		}
	}
	return 0
}
