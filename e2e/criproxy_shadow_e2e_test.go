//go:build e2e

package e2e_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/probelet/probelet/internal/testbed"
)

// shadowPods is how many pods TestCRIProxyShadowModeOverChurn runs through
// their whole life.
const shadowPods = 50

// TestCRIProxyShadowModeOverChurn: while 50 pods are created, started,
// exit on their own, are stopped and removed (straight on containerd, so
// the proxy learns of every change only from NRI and containerd's events)
// and containerd restarts halfway, a relist loop reads through the proxy
// like the kubelet's, and shadow mode compares the cached answers with
// containerd's: not one mismatch.
func TestCRIProxyShadowModeOverChurn(t *testing.T) {
	bed := testbed.Start(t)
	d := startCRIProxy(t, bed, "--verify")
	cli := criClient(t, proxyEndpoint(bed))

	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	var relists int
	go func() {
		defer wg.Done()
		relists = relistLoop(ctx, cli)
	}()

	for i := range shadowPods {
		if i == shadowPods/2 {
			if err := bed.RestartRuntime(); err != nil {
				t.Fatal(err)
			}
			eventually(t, 30*time.Second, "the proxy to resync with the restarted containerd", func() (bool, string) {
				n := len(d.logsMatching("Resynchronised with the runtime"))
				return n >= 2, fmt.Sprintf("%d resyncs", n)
			})
		}
		// Each container exits by itself after a moment: containerd
		// records such exits with no CRI call to invalidate on.
		podID, ctrID, err := bed.RunPod(testbed.PodSpec{Name: fmt.Sprintf("churn-%d", i),
			Container: testbed.ContainerSpec{Name: "c", Command: shell(fmt.Sprintf("sleep 0.%d; exit 3", i%10))}})
		if err != nil {
			t.Fatal(err)
		}
		waitExited(t, bed, ctrID, 30*time.Second)
		if err := bed.StopPod(podID); err != nil {
			t.Fatal(err)
		}
		if err := bed.RemovePod(podID); err != nil {
			t.Fatal(err)
		}
	}
	stop()
	wg.Wait()
	// Every memo answer is compared (or skipped when too many are in
	// flight); wait for the last comparisons to finish.
	results := map[string]float64{}
	eventually(t, 30*time.Second, "every memo answer compared", func() (bool, string) {
		hits := d.sumWhere("probelet_cri_proxy_calls_total", map[string]string{"served": "memo"})
		return d.sum("probelet_cri_proxy_verify_total") == hits, fmt.Sprintf("%v compared of %v", d.sum("probelet_cri_proxy_verify_total"), hits)
	})
	for _, r := range []string{"match", "mismatch", "settled", "error", "skipped"} {
		results[r], _ = d.sample("probelet_cri_proxy_verify_total", map[string]string{"result": r})
	}
	t.Logf("%d relists through the proxy, %v answers from the memo; shadow comparisons: %v", relists,
		d.sumWhere("probelet_cri_proxy_calls_total", map[string]string{"served": "memo"}), results)
	if m := d.sum("probelet_cri_proxy_mismatch_total"); m != 0 {
		t.Errorf("%v mismatches, want 0 (see probelet's log)", m)
	}
	if results["match"] < shadowPods {
		t.Errorf("only %v cached answers were compared and matched", results["match"])
	}
}

// relistLoop reads through the proxy what the kubelet's GenericPLEG
// reads, every 100 ms, until ctx ends: both lists, then the status of
// every sandbox and container listed. It returns the number of rounds.
func relistLoop(ctx context.Context, cli runtimeapi.RuntimeServiceClient) int {
	rounds := 0
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return rounds
		case <-tick.C:
		}
		rounds++
		call, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		sbs, err := cli.ListPodSandbox(call, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{}})
		if err == nil {
			for _, sb := range sbs.GetItems() {
				_, _ = cli.PodSandboxStatus(call, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sb.GetId()})
			}
		}
		ctrs, err := cli.ListContainers(call, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{}})
		if err == nil {
			for _, c := range ctrs.GetContainers() {
				_, _ = cli.ContainerStatus(call, &runtimeapi.ContainerStatusRequest{ContainerId: c.GetId()})
			}
		}
		cancel()
	}
}
