//go:build e2e

package e2e_test

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/probelet/probelet/internal/testbed"
	"github.com/probelet/probelet/probespec"
)

const (
	churnPods        = 50
	churnConcurrency = 5
	// goroutineSlack allows for runtime and HTTP keep-alive goroutines
	// that come and go; a leaked worker per pod would be 50+.
	goroutineSlack = 5
)

// TestChurnLeavesNothingBehind: 50 pods with startup, liveness and
// readiness probes are created, probed until ready and removed, five at a
// time. Afterwards probelet lists no container, its node cache is empty
// and its goroutines and file descriptors are back to the baseline (but
// for the ExecSync connections kept, at most one per call that ran at
// once). Once from the node (TCP answered by eBPF), once with every probe
// from the pod's own namespace (issue 46: TCP dialled there too), after
// which no namespace is pinned and no thread of probelet is in a pod's.
func TestChurnLeavesNothingBehind(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		origin string
		flags  []string
	}{
		{"node", nil},
		{"pod", []string{"--probe-origin", "pod", "--tcp-mode", "dial"}},
	} {
		t.Run(tc.origin, func(t *testing.T) {
			t.Parallel()
			bed := testbed.Start(t)
			d := startProbelet(t, bed, tc.flags...)
			// A warm-up pod opens what probelet keeps for good (the CRI
			// connection for exec probes) before the baseline is taken.
			churnOne(d, bed, "warmup")
			waitDrained(t, d, nil)
			base := baseline{goroutines: d.gauge("go_goroutines"), fds: d.gauge("process_open_fds"), execConns: d.gauge(execConnections),
				threads: threads(t, d)}
			t.Logf("baseline: %v goroutines, %v open fds, %v of them ExecSync connections, %d threads", base.goroutines, base.fds, base.execConns, base.threads)

			began := time.Now()
			if err := churn(d, bed); err != nil {
				t.Fatal(err)
			}
			t.Logf("%d pods created, probed until ready and removed in %v", churnPods, time.Since(began).Round(time.Millisecond))
			waitDrained(t, d, &base)
			if n, ok := d.sample("probelet_probe_origin_namespaces", nil); !ok || n != 0 {
				t.Errorf("%v pod namespaces still pinned", n)
			}
			threadsHome(t, d)
			if n := threads(t, d); n > base.threads+threadSlack {
				t.Errorf("%d threads after the churn, %d before", n, base.threads)
			}
		})
	}
}

// threadSlack allows the Go runtime a few more idle threads after a burst
// of work; one kept per pod would be 50.
const threadSlack = 8

// threads is how many threads probelet has.
func threads(t *testing.T, d *daemon) int {
	t.Helper()
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", d.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(tasks)
}

// threadsHome fails unless every thread of probelet is in its own network
// namespace (its main thread's).
func threadsHome(t *testing.T, d *daemon) {
	t.Helper()
	pid := d.cmd.Process.Pid
	home, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", pid))
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, task := range tasks {
		ns, err := os.Readlink(fmt.Sprintf("/proc/%d/task/%s/ns/net", pid, task.Name()))
		switch {
		case errors.Is(err, os.ErrNotExist): // the thread ended meanwhile
		case err != nil:
			t.Fatal(err)
		case ns != home:
			t.Errorf("probelet's thread %s is in %s, not its own %s", task.Name(), ns, home)
		default:
			checked++
		}
	}
	if checked == 0 {
		t.Error("no thread of probelet checked")
	}
}

// baseline is what probelet holds with no pods. ExecSync's connections
// are kept, one per call that ran at once (up to 16): the churn may leave
// up to churnConcurrency, and its other open files must be back.
type baseline struct {
	goroutines, fds, execConns float64
	threads                    int
}

const execConnections = "probelet_runtime_exec_connections"

// churn runs churnOne for churnPods pods, churnConcurrency at a time.
func churn(d *daemon, bed *testbed.Bed) error {
	var wg sync.WaitGroup
	errs := make(chan error, churnPods)
	next := make(chan int)
	for range churnConcurrency {
		wg.Go(func() {
			for i := range next {
				if err := churnOne(d, bed, fmt.Sprintf("churn-%02d", i)); err != nil {
					errs <- err
				}
			}
		})
	}
	for i := range churnPods {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return errors.Join(all...)
}

// churnOne runs a pod, waits until probelet finds it ready and removes it.
func churnOne(d *daemon, bed *testbed.Bed, name string) error {
	probes := probespec.ContainerProbes{
		Startup: execProbe(1, 10, "true"), Liveness: tcpProbe(appPort, 1, 3), Readiness: httpProbe("/", 1, 3),
	}
	anno, err := jsonString(probespec.PodProbes{name: probes})
	if err != nil {
		return err
	}
	podID, ctrID, err := bed.RunPod(testbed.PodSpec{Name: name, Annotations: map[string]string{probespec.AnnotationProbes: anno},
		Container: testbed.ContainerSpec{Name: name, Command: webApp, Ports: httpPort}})
	if err != nil {
		return err
	}
	if err := waitReadyQuiet(d, ctrID, 20*time.Second); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return bed.RemovePod(podID)
}

// waitReadyQuiet polls (slowly: many run at once) until the container is
// ready; it reports instead of failing the test.
func waitReadyQuiet(d *daemon, ctrID string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	last := "not listed"
	for time.Now().Before(deadline) {
		v, err := d.tryPS()
		if err != nil {
			return err
		}
		for _, c := range v {
			if c.ContainerID == ctrID {
				if c.Ready {
					return nil
				}
				last = fmt.Sprintf("%+v", c)
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	return fmt.Errorf("not ready after %v: %s", timeout, last)
}

// waitDrained waits until probelet lists nothing, its cache is empty and,
// given a baseline, its goroutines and open fds are back to it.
func waitDrained(t *testing.T, d *daemon, base *baseline) {
	t.Helper()
	eventually(t, 30*time.Second, "probelet drained", func() (bool, string) {
		listed := len(d.ps())
		pods, ctrs := d.gauge("probelet_lifecycle_pods"), d.gauge("probelet_lifecycle_containers")
		g, fds, conns := d.gauge("go_goroutines"), d.gauge("process_open_fds"), d.gauge(execConnections)
		ok := listed == 0 && pods == 0 && ctrs == 0
		if base != nil {
			ok = ok && g <= base.goroutines+goroutineSlack && conns <= max(base.execConns, churnConcurrency) &&
				fds-conns <= base.fds-base.execConns+goroutineSlack
		}
		return ok, fmt.Sprintf("listed %d, cache %v pods %v containers, %v goroutines, %v fds, %v of them ExecSync connections", listed, pods, ctrs, g, fds, conns)
	})
	if base != nil {
		t.Logf("drained: %v goroutines, %v open fds, %v of them ExecSync connections", d.gauge("go_goroutines"), d.gauge("process_open_fds"), d.gauge(execConnections))
	}
}
