//go:build e2e && bench

package e2e_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	probes "github.com/probelet/probelet/api/probes/v1alpha1"
	"github.com/probelet/probelet/cri/server"
	"github.com/probelet/probelet/cri/server/servertest"
	"github.com/probelet/probelet/internal/cluster"
	"github.com/probelet/probelet/internal/selfsigned"
	"github.com/probelet/probelet/kube"
	"github.com/probelet/probelet/kube/stateauth"
	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/prober"
)

// TestBenchProbeStateList is the probe-state API's benchmark (make bench;
// tags e2e and bench): BENCH_API_PODS pods (default 500) of one namespace
// over two nodes, listed through the real API server's aggregator and
// probelet-controller, by a user with view. Each node is probelet's own
// state listener (cri/server with its guard reviewing the controller's
// token at the API server) over a fixture of the pods' probe state, ten
// runs per probe. It prints the list's wall time (p50, p99 of
// BENCH_API_LISTS lists), the CPU the API server and the controller spent
// per list and their resident memory, and fails when p99 is 2 s or more.
// A node's own cost per read is BenchmarkListExplained (cri/server).
func TestBenchProbeStateList(t *testing.T) {
	pods, lists := envInt("BENCH_API_PODS", 500), envInt("BENCH_API_LISTS", 20)
	ctx := context.Background()
	c := cluster.Start(t)
	n := joinNode(t, c)
	n.applyDeployRights()
	applyControllerRights(t, c, "rbac.yaml", "serviceaccount.yaml", "admission-policy.yaml", "probe-api.yaml")
	ns := namespaceWithViewer(t, c, "bench", "alice")
	for i, name := range []string{"bench-node-a", "bench-node-b"} {
		var mine []int
		for p := i; p < pods; p += 2 {
			mine = append(mine, p)
		}
		serveFakeNode(t, n, name, ns, mine)
	}
	ctl := startProbeAPIController(t, n)
	alice := impersonating(t, c, "alice")
	list := func() (int, time.Duration, error) {
		start := time.Now()
		out := &probes.PodProbesList{}
		err := alice.Get().AbsPath("/apis", probes.GroupName, "v1alpha1", "namespaces", ns, "podprobes").Do(ctx).Into(out)
		answered := 0
		for _, p := range out.Items {
			if p.Source.Answered && len(p.Containers) == 1 {
				answered++
			}
		}
		return answered, time.Since(start), err
	}
	eventually(t, time.Minute, "every pod answered", func() (bool, string) {
		got, _, err := list()
		return err == nil && got == pods, fmt.Sprintf("%d of %d answered, %v", got, pods, err)
	})
	apiPID := pidFile(t, filepath.Join(c.Dir(), "kube-apiserver.pid"))
	ctlPID := ctl.cmd.Process.Pid
	apiCPU, ctlCPU := cpuTime(t, apiPID), cpuTime(t, ctlPID)
	var times []time.Duration
	for range lists {
		got, took, err := list()
		if err != nil || got != pods {
			t.Fatalf("a list: %d of %d answered, %v", got, pods, err)
		}
		times = append(times, took)
	}
	apiCPU, ctlCPU = cpuTime(t, apiPID)-apiCPU, cpuTime(t, ctlPID)-ctlCPU
	slices.Sort(times)
	p50, p99 := times[len(times)/2], times[(len(times)*99+99)/100-1]
	t.Logf("probe-state API, %d pods over 2 nodes, %d lists by a viewer through the aggregator: wall p50 %s, p99 %s; "+
		"CPU per list: kube-apiserver %s, probelet-controller %s; RSS: kube-apiserver %d MiB, probelet-controller %d MiB",
		pods, lists, p50.Round(time.Millisecond), p99.Round(time.Millisecond),
		(apiCPU / time.Duration(lists)).Round(time.Millisecond), (ctlCPU / time.Duration(lists)).Round(time.Millisecond),
		rssMiB(t, apiPID), rssMiB(t, ctlPID))
	if p99 >= 2*time.Second {
		t.Errorf("p99 %s, want under 2 s", p99)
	}
}

// serveFakeNode is a node named name running probelet's state listener
// over a fixture of the probe state of pods ns/pod-NNN (nums), each bound
// to it in the API, with its Lease written by its own bound token.
func serveFakeNode(t *testing.T, n *clusterNode, name, ns string, nums []int) {
	t.Helper()
	ctx := context.Background()
	nodeObj, err := n.admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.admin.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	base, st := servertest.Pods()[0], servertest.Statuses()[0]
	var nodePods []node.Pod
	var sts []prober.ContainerStatus
	for _, i := range nums {
		podName := fmt.Sprintf("pod-%03d", i)
		created, err := n.admin.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: podName, Namespace: ns},
			Spec: corev1.PodSpec{NodeName: name, Containers: []corev1.Container{{Name: "app", Image: "none"}}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p := base
		p.Name, p.Namespace, p.UID = podName, ns, string(created.UID)
		p.Containers = []node.Container{base.Containers[0]}
		p.Containers[0].ID = fmt.Sprintf("%06x%058d", i, 0)
		s := st
		s.PodUID, s.PodName, s.PodNamespace, s.ContainerID = p.UID, podName, ns, p.Containers[0].ID
		for k, ps := range s.Probes {
			for len(ps.History) < 10 {
				ps.History = append(ps.History, ps.History...)
			}
			ps.History = ps.History[:10]
			s.Probes[k] = ps
		}
		nodePods, sts = append(nodePods, p), append(sts, s)
	}
	srv, err := server.New(servertest.NewStatus(sts...), servertest.NewView(nodePods...))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", n.tokenFor(name))
	if err != nil {
		t.Fatal(err)
	}
	client, err := kube.NewClient(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	cert, pin, err := selfsigned.New("probelet-state "+name, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", net.JoinHostPort(n.k.NodeIP(), "0"))
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.ServeState(sctx, lis, cert, stateauth.New(client, name, nil).GRPC) }()
	t.Cleanup(func() { cancel(); <-done })
	stateLease(t, n, nodeObj, lis.Addr().String(), pin)
}

func pidFile(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// cpuTime is a process's user and system time.
func cpuTime(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond // USER_HZ 100
}

// rssMiB is a process's resident memory.
func rssMiB(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return kb / 1024
		}
	}
	return 0
}
