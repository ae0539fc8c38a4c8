//go:build e2e

package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/probelet/probelet/internal/cluster"
	"github.com/probelet/probelet/internal/testbed"
)

// staticWeb is a static pod: busybox httpd with an HTTP readiness probe,
// so the prober metrics have something to count.
const staticWeb = `apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: default
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: web
    image: %s
    imagePullPolicy: Never
    command: [httpd, -f, -p, "8080", -h, /var/www]
    readinessProbe:
      httpGet: {path: /, port: 8080}
      periodSeconds: 1
`

// TestStandaloneKubelet: no API server; a static pod runs and turns ready,
// the read-only port serves /pods and the prober metrics, and removing the
// manifest removes the pod.
func TestStandaloneKubelet(t *testing.T) {
	bed := testbed.Start(t)
	mark := time.Now()
	k := cluster.StartStandaloneKubelet(t, bed, cluster.WithNodeName("standalone"))
	t.Logf("standalone kubelet healthy in %v; read-only port %s", time.Since(mark).Round(time.Millisecond), k.ReadOnlyURL())
	if !k.Standalone() {
		t.Error("Standalone() = false")
	}

	mark = time.Now()
	if err := k.AddStaticPod("web", fmt.Appendf(nil, staticWeb, testbed.BusyboxImage)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Static pods are named NAME-NODENAME.
	pod, err := waitPods(ctx, k, func(pods []corev1.Pod) *corev1.Pod {
		for i, p := range pods {
			if p.Name == "web-standalone" && cluster.PodCondition(&p, corev1.PodReady) == corev1.ConditionTrue {
				return &pods[i]
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("static pod ready %v after its manifest appeared (IP %s)", time.Since(mark).Round(time.Millisecond), pod.Status.PodIP)

	metrics := get(t, k.ReadOnlyURL()+"/metrics/probes")
	if !strings.Contains(metrics, `prober_probe_total{container="web"`) {
		t.Errorf("/metrics/probes has no prober_probe_total for web:\n%s", metrics)
	}
	if m := get(t, k.ReadOnlyURL()+"/metrics"); !strings.Contains(m, "kubelet_running_pods") {
		t.Error("/metrics has no kubelet_running_pods")
	}

	if err := k.RemoveStaticPod("web"); err != nil {
		t.Fatal(err)
	}
	if _, err := waitPods(ctx, k, func(pods []corev1.Pod) *corev1.Pod {
		if len(pods) == 0 {
			return &corev1.Pod{}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// waitPods polls the read-only /pods until accept returns a pod.
func waitPods(ctx context.Context, k *cluster.Kubelet, accept func([]corev1.Pod) *corev1.Pod) (*corev1.Pod, error) {
	var last string
	for {
		var list corev1.PodList
		body, err := fetch(ctx, k.ReadOnlyURL()+"/pods")
		if err == nil {
			if err = json.Unmarshal([]byte(body), &list); err == nil {
				if p := accept(list.Items); p != nil {
					return p, nil
				}
				last = summarize(list.Items)
			}
		}
		if err != nil {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting on %s/pods: %w; last: %s", k.ReadOnlyURL(), ctx.Err(), last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func summarize(pods []corev1.Pod) string {
	var parts []string
	for _, p := range pods {
		parts = append(parts, fmt.Sprintf("%s %s Ready=%s", p.Name, p.Status.Phase, cluster.PodCondition(&p, corev1.PodReady)))
	}
	return "[" + strings.Join(parts, "; ") + "]"
}

func fetch(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := (&http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil}}).Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return string(body), err
}

func get(t *testing.T, url string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	body, err := fetch(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	return body
}
