//go:build e2e && bench

package e2e_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/probelet/probelet/probespec"
)

// TestBenchReadinessCondition is the readiness gate's benchmark (make
// bench; build tags e2e and bench): N pods on a real kubelet whose apps
// listen for 10 s and then not for 10 s, so their TCP readiness flaps; it
// reports result change → condition visible in the API (a watch, p50/p99)
// and API writes per minute next to the result changes per minute, and
// fails when a write failed or there were more writes than changes.
func TestBenchReadinessCondition(t *testing.T) {
	pods := envInt("BENCH_READINESS_PODS", 100)
	window := envDuration("BENCH_READINESS_WINDOW", 2*time.Minute)
	n := startClusterNode(t)
	ctx := context.Background()
	for i := range pods {
		// Staggered phases: a flap somewhere every 20/N seconds.
		app := fmt.Sprintf("sleep %d; while true; do timeout 10 nc -ll -p 8080 -e true; sleep 10; done", i%20)
		readiness := tcpProbe(appPort, 1, 1)
		n.create(n.apiPod(fmt.Sprintf("flap-%03d", i), shell(app), probespec.ContainerProbes{Readiness: readiness}, true))
	}
	eventually(t, 5*time.Minute, "every pod running", func() (bool, string) {
		list, err := n.admin.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		running := 0
		for _, p := range list.Items {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return running == pods, fmt.Sprintf("%d of %d running", running, pods)
	})

	changes := watchResults(t, n.d)
	seen := watchConditions(t, n)
	const writesMetric = "probelet_readiness_condition_writes_total"
	failed := map[string]string{"result": "error"}
	// Writes are counted from leadIn after the logs began: the write for
	// a change from before they began is over by then (p99 0.1 s), so each
	// counted write's change is in the log.
	const leadIn = 5 * time.Second
	time.Sleep(leadIn) // part of the measurement: the lead-in
	writes0, failed0 := n.d.sum(writesMetric), n.d.sumWhere(writesMetric, failed)
	start := time.Now()
	time.Sleep(window) // the measurement window: results and conditions flow meanwhile
	end := time.Now()
	writes := n.d.sum(writesMetric) - writes0
	failedWrites := n.d.sumWhere(writesMetric, failed) - failed0

	// Latency of the changes that had 5 s to show; the rates over the
	// whole window, the writes' window.
	var lat []time.Duration
	timed := changes.between(start, end.Add(-5*time.Second))
	for _, c := range timed {
		if at, ok := seen.first(c.pod, c.ready, c.at); ok {
			lat = append(lat, at.Sub(c.at))
		}
	}
	nChanges := len(changes.between(start, end))
	slices.Sort(lat)
	minutes := end.Sub(start).Minutes()
	t.Logf("readiness gate, %d pods flapping every 10 s, window %v:", pods, window)
	t.Logf("  result change → condition seen by a watch: n=%d p50 %v p99 %v max %v (of %d changes)",
		len(lat), pct(lat, 50), pct(lat, 99), pct(lat, 100), len(timed))
	t.Logf("  readiness result changes %.0f/min, condition writes %.0f/min, of them failed and retried %.0f/min (a write per change at most, and its retries; coalesced when a pod flaps faster than a write)",
		float64(nChanges)/minutes, writes/minutes, failedWrites/minutes)

	// The README's claims: none failed, one write per change at most.
	if nChanges == 0 || len(lat) == 0 {
		t.Fatalf("%d result changes, %d seen as conditions in the window: nothing was measured", nChanges, len(lat))
	}
	if failedWrites != 0 {
		t.Errorf("%.0f condition writes failed, want none", failedWrites)
	}
	if written := len(changes.between(start.Add(-leadIn), end)); writes > float64(written) {
		t.Errorf("%.0f condition writes for %d result changes (%d in the window and the lead-in before it): more than one write per change",
			writes, nChanges, written)
	}
}

type resultChange struct {
	pod   string
	ready bool
	at    time.Time
}

type changeLog struct {
	mu  sync.Mutex
	all []resultChange
}

func (l *changeLog) between(from, to time.Time) []resultChange {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []resultChange
	for _, c := range l.all {
		if !c.at.Before(from) && c.at.Before(to) {
			out = append(out, c)
		}
	}
	return out
}

// watchResults follows probelet's readiness result changes (probectl watch).
func watchResults(t *testing.T, d *daemon) *changeLog {
	cmd := exec.Command(bins.probectl, "--socket", d.socket, "watch", "-o", "json")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	l := &changeLog{}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var v struct {
				Time    time.Time `json:"time"`
				PodName string    `json:"podName"`
				Probe   string    `json:"probe"`
				Result  string    `json:"result"`
			}
			if json.Unmarshal(sc.Bytes(), &v) != nil || v.Probe != "readiness" {
				continue
			}
			l.mu.Lock()
			l.all = append(l.all, resultChange{pod: v.PodName, ready: v.Result == "Success", at: v.Time})
			l.mu.Unlock()
		}
	}()
	return l
}

type conditionLog struct {
	mu  sync.Mutex
	byP map[string][]resultChange
}

// first is when a watch first saw pod's condition as ready after since.
func (l *conditionLog) first(pod string, ready bool, since time.Time) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.byP[pod] {
		if c.ready == ready && !c.at.Before(since) {
			return c.at, true
		}
	}
	return time.Time{}, false
}

// watchConditions records when a watch on the API server sees each pod's
// probelet.io/ready condition change.
func watchConditions(t *testing.T, n *clusterNode) *conditionLog {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w, err := n.admin.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l := &conditionLog{byP: map[string][]resultChange{}}
	last := map[string]corev1.ConditionStatus{}
	go func() {
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok || ev.Type == watch.Deleted {
				continue
			}
			c, _ := condition(p, readyGate)
			if c.Status == "" || c.Status == last[p.Name] {
				continue
			}
			last[p.Name] = c.Status
			l.mu.Lock()
			l.byP[p.Name] = append(l.byP[p.Name], resultChange{pod: p.Name, ready: c.Status == corev1.ConditionTrue, at: time.Now()})
			l.mu.Unlock()
		}
	}()
	return l
}

func pct(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p + 99) / 100
	return sorted[min(max(i-1, 0), len(sorted)-1)].Round(time.Millisecond)
}
