//go:build e2e

package e2e_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/probelet/probelet/internal/cluster"
	"github.com/probelet/probelet/internal/testbed"
)

// TestCRIProxyRunsAKubelet: a real kubelet (standalone, Evented PLEG on)
// runs its pods through probelet's CRI proxy. Pods start, the kubelet's
// own liveness probe restarts a container, the kubelet's /pods shows
// what containerd shows directly, unmodified crictl prints the same JSON
// through the proxy as against containerd, relist reads come from the
// memo, the kubelet follows probelet's event stream, and shadow mode saw
// no mismatch.
func TestCRIProxyRunsAKubelet(t *testing.T) {
	t.Parallel() // functional, no timing bound of its own: beside the others
	bed := testbed.Start(t)
	proxy := proxyEndpoint(bed)
	d := startCRIProxy(t, bed, "--verify")
	prober := startProbelet(t, bed) // beside it, as deployed
	k := cluster.StartStandaloneKubelet(t, bed, cluster.WithNodeName("proxied"),
		cluster.WithCRIEndpoint(proxy), cluster.WithImageEndpoint(proxy),
		cluster.WithKubeletFeatureGates("EventedPLEG=true"))

	marks := filepath.Join(bed.Dir(), "marks")
	if err := os.MkdirAll(marks, 0o755); err != nil {
		t.Fatal(err)
	}
	// live fails its liveness probe on its first run only: the mark on
	// the host outlives the container.
	live := staticPod("live", "if [ -e /marks/once ]; then touch /tmp/healthy; else touch /marks/once; fi; exec sleep 3600",
		fmt.Sprintf(`    livenessProbe:
      exec: {command: [cat, /tmp/healthy]}
      periodSeconds: 1
      failureThreshold: 1
    volumeMounts: [{name: marks, mountPath: /marks}]
  volumes: [{name: marks, hostPath: {path: %s}}]
`, marks))
	web := staticPod("web", "exec httpd -f -p 8080 -h /var/www", `    readinessProbe:
      httpGet: {path: /, port: 8080}
      periodSeconds: 1
`)
	for name, m := range map[string][]byte{"live": live, "web": web} {
		if err := k.AddStaticPod(name, m); err != nil {
			t.Fatal(err)
		}
	}
	var pods []corev1.Pod
	eventually(t, 2*time.Minute, "web ready and live restarted once and ready", func() (bool, string) {
		var err error
		if pods, err = kubeletPods(k); err != nil {
			return false, err.Error()
		}
		ok := len(pods) == 2
		var state []string
		for i := range pods {
			p := &pods[i]
			restarts := int32(-1)
			if len(p.Status.ContainerStatuses) == 1 {
				restarts = p.Status.ContainerStatuses[0].RestartCount
			}
			state = append(state, fmt.Sprintf("%s ready=%v restarts=%d", p.Name, podReady(p), restarts))
			want := int32(0)
			if strings.HasPrefix(p.Name, "live") {
				want = 1
			}
			ok = ok && podReady(p) && restarts == want
		}
		return ok, strings.Join(state, "; ")
	})

	checkKubeletMatchesContainerd(t, bed, pods)
	checkCrictlIdentical(t, bed, proxy)

	if hits, _ := d.sample("probelet_cri_proxy_calls_total", map[string]string{"method": "ListContainers", "served": "memo"}); hits == 0 {
		t.Error("no ListContainers was answered from the memo")
	}
	if n := d.gauge("probelet_cri_proxy_event_streams"); n != 1 {
		t.Errorf("%v GetContainerEvents streams open, want the kubelet's one (Evented PLEG)", n)
	}

	// containerd restarts: the kubelet's event stream, held by probelet,
	// does not break (direct, the kubelet spends all 5 of its lifetime
	// retries while containerd is down and gives Evented PLEG up).
	if err := bed.RestartRuntime(); err != nil {
		t.Fatal(err)
	}
	waitReregistered(t, prober, bed, 2)
	eventually(t, 30*time.Second, "the proxy to resync with the restarted containerd", func() (bool, string) {
		n := len(d.logsMatching("Resynchronised with the runtime"))
		return n >= 2, fmt.Sprintf("%d resyncs", n)
	})
	if n := kubeletCounter(t, k, "kubelet_evented_pleg_connection_error_count"); n != 0 {
		t.Errorf("the kubelet's event stream broke %v times", n)
	}
	if n := kubeletCounter(t, k, "kubelet_evented_pleg_connection_success_count"); n != 1 {
		t.Errorf("the kubelet opened its event stream %v times, want once", n)
	}
	if n := d.gauge("probelet_cri_proxy_event_streams"); n != 1 {
		t.Errorf("%v event streams open after the containerd restart, want the kubelet's one", n)
	}

	checked, _ := d.sample("probelet_cri_proxy_verify_total", map[string]string{"result": "match"})
	if m := d.sum("probelet_cri_proxy_mismatch_total"); m != 0 || checked == 0 {
		t.Errorf("shadow mode: %v mismatches in %v matching comparisons, want 0 in some", m, checked)
	}
	t.Logf("memo: %v verified answers matched containerd's", checked)
}

// checkKubeletMatchesContainerd: every container the kubelet reports is
// the one containerd has, in the same state.
func checkKubeletMatchesContainerd(t *testing.T, bed *testbed.Bed, pods []corev1.Pod) {
	t.Helper()
	for _, p := range pods {
		for _, s := range p.Status.ContainerStatuses {
			st, err := bed.ContainerState(containerID(s))
			if err != nil {
				t.Errorf("%s/%s: containerd does not know %s: %v", p.Name, s.Name, containerID(s), err)
				continue
			}
			if (s.State.Running != nil) != (st.State == "CONTAINER_RUNNING") {
				t.Errorf("%s/%s: kubelet says running=%v, containerd %s", p.Name, s.Name, s.State.Running != nil, st.State)
			}
		}
	}
}

// checkCrictlIdentical: unmodified crictl prints byte-identical JSON
// through the proxy and against containerd for pods, ps -a, inspect and
// inspectp. The kubelet keeps running, so a comparison counts only when
// containerd's own answer did not change around it.
func checkCrictlIdentical(t *testing.T, bed *testbed.Bed, proxy string) {
	t.Helper()
	direct := bed.CRIEndpoint()
	var ps struct {
		Containers []struct{ ID, PodSandboxID string } `json:"containers"`
	}
	out, err := crictlAt(bed, direct, "ps", "-a", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(out, &ps); err != nil || len(ps.Containers) == 0 {
		t.Fatalf("crictl ps: %v %s", err, out)
	}
	cmds := [][]string{{"pods", "-o", "json"}, {"ps", "-a", "-o", "json"}, {"images", "-o", "json"}}
	for _, c := range ps.Containers {
		cmds = append(cmds, []string{"inspect", c.ID}, []string{"inspectp", c.PodSandboxID})
	}
	for _, args := range cmds {
		same := false
		for attempt := 0; attempt < 5 && !same; attempt++ {
			before, err1 := crictlAt(bed, direct, args...)
			via, err2 := crictlAt(bed, proxy, args...)
			after, err3 := crictlAt(bed, direct, args...)
			if err1 != nil || err2 != nil || err3 != nil {
				t.Fatalf("crictl %v: %v %v %v", args, err1, err2, err3)
			}
			if !bytes.Equal(before, after) {
				continue // containerd changed meanwhile; ask again
			}
			if !bytes.Equal(before, via) {
				t.Errorf("crictl %v differs through the proxy:\ncontainerd: %s\nproxy:      %s", args, before, via)
			}
			same = true
		}
		if !same {
			t.Errorf("crictl %v: containerd's answer never held still for a comparison", args)
		}
	}
}
