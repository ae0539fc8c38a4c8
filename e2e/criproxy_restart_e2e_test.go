//go:build e2e

package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/probelet/probelet/internal/cluster"
	"github.com/probelet/probelet/internal/testbed"
)

const (
	restartPods  = 20
	restartTimes = 10
	// maxStall is the longest a CRI call through the proxy may wait
	// while probelet restarts (deploy/README.md documents it): the
	// kubelet's own limits are far above it (a 2 min runtime request
	// timeout, the runtime marked down after 30 s without a Status, PLEG
	// unhealthy after 3 min without a relist).
	maxStall = 2 * time.Second
)

// TestCRIProxySurvivesItsOwnRestarts: the test holds the proxy's
// listening socket, as systemd's probelet-cri-proxy.socket does, and
// passes it to each `probelet cri-proxy` it starts (LISTEN_FDS), as an
// upgrade restarts it. The proxy restarts 10 times while a kubelet runs 20
// pods through it: no pod restarts, no container is killed, every CRI
// call made meanwhile succeeds and waits at most maxStall, and the kubelet
// never reports its runtime down.
func TestCRIProxySurvivesItsOwnRestarts(t *testing.T) {
	bed := testbed.Start(t)
	sock := filepath.Join(bed.Dir(), "cri.sock")
	held := holdSocket(t, sock)
	pl := startActivated(t, bed, held)
	k := cluster.StartStandaloneKubelet(t, bed, cluster.WithNodeName("restarts"),
		cluster.WithCRIEndpoint("unix://"+sock), cluster.WithImageEndpoint("unix://"+sock))
	for i := range restartPods {
		if err := k.AddStaticPod(fmt.Sprintf("p%d", i), staticPod(fmt.Sprintf("p%d", i), "exec sleep 3600", "")); err != nil {
			t.Fatal(err)
		}
	}
	before := waitAllRunning(t, k, restartPods)
	// A kubelet logs "PLEG is not healthy" while it starts; only what it
	// logs from here on counts.
	logFrom := fileSize(t, k.LogPath())

	stop := watchStalls(t, "unix://"+sock)
	for i := range restartTimes {
		began := time.Now()
		pl.stop()
		pl.start()
		t.Logf("restart %d: the proxy serving again after %v", i+1, time.Since(began).Round(time.Millisecond))
	}
	watch := stop()

	t.Logf("%d CRI calls during the restarts: %d failed, longest %v", watch.calls, len(watch.errs), watch.longest)
	if len(watch.errs) > 0 {
		t.Errorf("calls through the proxy failed during restarts: %v", watch.errs)
	}
	if watch.longest > maxStall {
		t.Errorf("a call waited %v, more than the documented %v", watch.longest, maxStall)
	}
	kubeletUnharmed(t, k, before, logFrom)
}

// kubeletUnharmed checks that the kubelet's pods kept the containers they
// had (before), and that it logged no runtime trouble after logFrom.
func kubeletUnharmed(t *testing.T, k *cluster.Kubelet, before map[string]string, logFrom int64) {
	t.Helper()
	after := waitAllRunning(t, k, len(before))
	for name, id := range before {
		if after[name] != id {
			t.Errorf("%s: container %s replaced by %s", name, id, after[name])
		}
	}
	data, err := os.ReadFile(k.LogPath())
	if err != nil {
		t.Fatal(err)
	}
	log := data[logFrom:]
	for _, bad := range []string{"Skipping pod synchronization", "Container runtime sanity check failed",
		"Container runtime not ready", "PLEG is not healthy", "container runtime is down"} {
		if strings.Contains(string(log), bad) {
			t.Errorf("the kubelet logged %q", bad)
		}
	}
}

// TestCRIProxyIgnoresProberCrashes: the prober and the CRI proxy are two
// processes. A kubelet runs 10 pods through the proxy while the prober is
// SIGKILLed 20 times (a crash loop) and once started under a memory limit
// it cannot start within (the kernel's OOM killer ends it): the kubelet's
// runtime operation errors do not move, no pod restarts, no CRI call
// through the proxy fails, and the kubelet never reports its runtime down.
func TestCRIProxyIgnoresProberCrashes(t *testing.T) {
	const pods, crashes = 10, 20
	bed := testbed.Start(t)
	startCRIProxy(t, bed)
	prober := startProbelet(t, bed)
	proxy := proxyEndpoint(bed)
	k := cluster.StartStandaloneKubelet(t, bed, cluster.WithNodeName("crashes"),
		cluster.WithCRIEndpoint(proxy), cluster.WithImageEndpoint(proxy))
	for i := range pods {
		if err := k.AddStaticPod(fmt.Sprintf("c%d", i), staticPod(fmt.Sprintf("c%d", i), "exec sleep 3600", "")); err != nil {
			t.Fatal(err)
		}
	}
	before := waitAllRunning(t, k, pods)
	logFrom := fileSize(t, k.LogPath())
	errors0 := kubeletCounterSum(t, k, "kubelet_runtime_operations_errors_total")

	stop := watchStalls(t, proxy)
	for range crashes {
		prober.kill()
		prober.start()
	}
	prober.kill()
	oomKilled(t, prober, 8<<20)
	prober.wrap = nil
	prober.start()
	watch := stop()

	t.Logf("%d CRI calls while the prober crashed %d times and was OOM-killed once: %d failed, longest %v", watch.calls, crashes, len(watch.errs), watch.longest)
	if len(watch.errs) > 0 {
		t.Errorf("calls through the proxy failed while the prober crashed: %v", watch.errs)
	}
	if errs := kubeletCounterSum(t, k, "kubelet_runtime_operations_errors_total"); errs != errors0 {
		t.Errorf("kubelet_runtime_operations_errors_total went from %v to %v", errors0, errs)
	}
	kubeletUnharmed(t, k, before, logFrom)
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// waitAllRunning waits until the kubelet reports n pods ready with their
// container never restarted, and returns pod name → container ID.
func waitAllRunning(t *testing.T, k *cluster.Kubelet, n int) map[string]string {
	t.Helper()
	ids := map[string]string{}
	eventually(t, 3*time.Minute, fmt.Sprintf("%d pods running, none restarted", n), func() (bool, string) {
		pods, err := kubeletPods(k)
		if err != nil {
			return false, err.Error()
		}
		clear(ids)
		ready := 0
		for i := range pods {
			p := &pods[i]
			if len(p.Status.ContainerStatuses) != 1 {
				continue
			}
			s := p.Status.ContainerStatuses[0]
			if s.RestartCount != 0 {
				t.Fatalf("%s restarted %d times", p.Name, s.RestartCount)
			}
			if podReady(p) && s.State.Running != nil {
				ready++
				ids[p.Name] = containerID(s)
			}
		}
		return ready == n && len(pods) == n, fmt.Sprintf("%d of %d ready", ready, len(pods))
	})
	return ids
}

// watchStalls runs a stallWatch on endpoint until the returned stop, which
// waits for it and returns what it saw.
func watchStalls(t *testing.T, endpoint string) (stop func() *stallWatch) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	watch := &stallWatch{}
	cli := criClient(t, endpoint)
	go func() {
		defer close(done)
		watch.run(ctx, cli)
	}()
	return func() *stallWatch {
		cancel()
		<-done
		return watch
	}
}

// stallWatch calls Version through the proxy back to back and records the
// longest call and any failure.
type stallWatch struct {
	calls   int
	longest time.Duration
	errs    []string
}

func (w *stallWatch) run(ctx context.Context, cli runtimeapi.RuntimeServiceClient) {
	for ctx.Err() == nil {
		call, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		began := time.Now()
		_, err := cli.Version(call, &runtimeapi.VersionRequest{})
		took := time.Since(began)
		cancel()
		w.calls++
		w.longest = max(w.longest, took)
		if err != nil && len(w.errs) < 10 {
			w.errs = append(w.errs, err.Error())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// holdSocket binds the proxy's socket the way systemd does for a socket
// unit and keeps it for the whole test.
func holdSocket(t *testing.T, path string) *os.File {
	t.Helper()
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(true)
	f, err := l.File()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close(); l.Close() })
	return f
}

// activated is a `probelet cri-proxy` started as systemd starts a
// socket-activated service: the socket on fd 3, LISTEN_FDS=1 and
// LISTEN_PID naming the service's own PID.
type activated struct {
	t    *testing.T
	bed  *testbed.Bed
	sock *os.File
	cmd  *exec.Cmd
	done chan struct{}
	runs int
	log  string
}

func startActivated(t *testing.T, bed *testbed.Bed, sock *os.File) *activated {
	a := &activated{t: t, bed: bed, sock: sock}
	t.Cleanup(func() {
		a.stop()
		if t.Failed() {
			data, _ := os.ReadFile(a.log)
			lines := strings.Split(strings.TrimSpace(string(data)), "\n")
			t.Logf("last lines of %s:\n%s", a.log, strings.Join(lines[max(0, len(lines)-40):], "\n"))
		}
	})
	a.start()
	return a
}

// start runs the proxy and waits until it serves on the passed socket.
func (a *activated) start() {
	a.t.Helper()
	a.runs++
	a.log = filepath.Join(a.bed.Dir(), fmt.Sprintf("activated-%d.log", a.runs))
	logFile, err := os.Create(a.log)
	if err != nil {
		a.t.Fatal(err)
	}
	defer logFile.Close()
	// sh sets LISTEN_PID to its own PID and execs probelet, which keeps it.
	a.cmd = exec.Command("/bin/sh", "-c", `LISTEN_PID=$$ LISTEN_FDS=1 exec "$0" "$@"`, bins.probelet, "cri-proxy",
		"--listen", "unix://"+filepath.Join(a.bed.Dir(), "cri.sock"), "--runtime-endpoint", a.bed.CRIEndpoint(),
		"--metrics-bind-address", "127.0.0.1:0", "--log-format", "json")
	a.cmd.ExtraFiles = []*os.File{a.sock}
	a.cmd.Stdout, a.cmd.Stderr = logFile, logFile
	if err := a.cmd.Start(); err != nil {
		a.t.Fatal(err)
	}
	a.done = make(chan struct{})
	go func(cmd *exec.Cmd, done chan struct{}) { _ = cmd.Wait(); close(done) }(a.cmd, a.done)
	eventually(a.t, daemonStartTimeout, "the proxy to serve on the passed socket", func() (bool, string) {
		data, _ := os.ReadFile(a.log)
		return strings.Contains(string(data), `"socketActivated":true`), string(data)
	})
}

// stop sends SIGTERM and waits for the exit.
func (a *activated) stop() {
	if a.cmd == nil || a.cmd.ProcessState != nil {
		return
	}
	select {
	case <-a.done:
		return
	default:
	}
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-a.done:
	case <-time.After(daemonStopTimeout):
		_ = a.cmd.Process.Kill()
		<-a.done
		a.t.Errorf("the proxy did not stop within %v of SIGTERM", daemonStopTimeout)
	}
}

// oomKilled runs d once more in a memory cgroup of its own (cgroup v1)
// limited to limit bytes, with its garbage collector off, and waits until
// the kernel's OOM killer has ended it.
func oomKilled(t *testing.T, d *daemon, limit int64) {
	t.Helper()
	cg := memoryCgroup(t, "oom", limit)
	// GOGC=off: nothing it allocates is freed, so it surely outgrows the
	// limit while it starts. The limit must be crossed by the process's
	// own page faults, which call the OOM killer: a large kernel charge
	// (an eBPF map) over the limit fails with ENOMEM instead, and probelet
	// degrades to dialling and runs on. Measured with GOGC=off: ~7 MiB
	// touched before the listener tracker loads, ~15 MiB user and 4.5 MiB
	// kernel memory once it has; at 16 MiB the map creation sometimes
	// crossed first (a CI run), at 8 MiB six of six runs were OOM-killed
	// while parsing BTF.
	d.wrap = inCgroup(cg, "GOGC=off")
	d.launch()
	select {
	case <-d.done:
	case <-time.After(daemonStartTimeout):
		t.Fatalf("the prober still runs under a %d MiB limit:\n%s", limit>>20, d.logTail(20))
	}
	var exit *exec.ExitError
	if !errors.As(d.err, &exit) || exit.ProcessState.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the prober under a %d MiB limit ended with %v, want the OOM killer's SIGKILL:\n%s", limit>>20, d.err, d.logTail(20))
	}
	if n := cgroupOOMKills(t, cg); n != 1 {
		t.Fatalf("the prober was killed, but the OOM killer counts %d kills", n)
	}
}

// memoryCgroup makes a memory cgroup (v1) of its own limited to limit
// bytes, swap included where the kernel accounts it, removed when the
// test ends.
func memoryCgroup(t *testing.T, name string, limit int64) string {
	t.Helper()
	cg := filepath.Join("/sys/fs/cgroup/memory", fmt.Sprintf("probelet-e2e-%s-%d", name, os.Getpid()))
	if err := os.Mkdir(cg, 0o755); err != nil {
		t.Fatalf("a memory cgroup: %v", err)
	}
	t.Cleanup(func() { _ = os.Remove(cg) })
	for file, v := range map[string]string{"memory.limit_in_bytes": strconv.FormatInt(limit, 10), "memory.memsw.limit_in_bytes": strconv.FormatInt(limit, 10)} {
		if err := os.WriteFile(filepath.Join(cg, file), []byte(v), 0o644); err != nil && file == "memory.limit_in_bytes" {
			t.Fatalf("%s: %v", file, err)
		}
	}
	return cg
}

// inCgroup is a daemon's wrap that runs it in cgroup cg with env set
// (NAME=value words).
func inCgroup(cg string, env ...string) []string {
	return append([]string{"/bin/sh", "-c", `echo $$ > "$1/cgroup.procs" && shift && exec env "$@"`, "sh", cg}, env...)
}

// cgroupOOMKills is how many processes the OOM killer ended in cg.
func cgroupOOMKills(t *testing.T, cg string) int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(cg, "memory.oom_control"))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatalf("memory.oom_control: %q", line)
			}
			return n
		}
	}
	t.Fatalf("memory.oom_control has no oom_kill count: %s", data)
	return 0
}
