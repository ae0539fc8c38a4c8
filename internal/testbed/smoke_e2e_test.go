//go:build e2e

package testbed_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/probelet/probelet/internal/testbed"
	"github.com/probelet/probelet/internal/testutil"
)

const indexHTML = "probelet test bed\n"

func TestSmoke(t *testing.T) {
	began := time.Now()
	bed := testbed.Start(t)
	t.Logf("bed up in %v at %s", time.Since(began).Round(time.Millisecond), bed.Dir())

	podID, ctrID := runWeb(t, bed)
	ip, err := bed.PodIP(podID)
	if err != nil {
		t.Fatal(err)
	}
	if got := httpGet(t, ip); got != indexHTML {
		t.Errorf("GET http://%s:8080/ = %q, want %q", ip, got, indexHTML)
	}
	checkExec(t, bed, ctrID)
	mark := time.Now()
	checkRestartedContainer(t, bed, podID)
	t.Logf("restarted container check %v", time.Since(mark))
	dialNRI(t, bed)
	checkAnnotations(t, bed, podID, ctrID)
	checkRestartContainerd(t, bed, ip)
	mark = time.Now()
	checkStopRemove(t, bed, podID, ctrID)
	t.Logf("stop/remove %v", time.Since(mark))

	// A second pod stays running: Stop must clean it up too.
	_, running := runWeb(t, bed)
	st, err := bed.ContainerState(running)
	if err != nil || st.Pid == 0 {
		t.Fatalf("second pod: state %+v, %v", st, err)
	}
	pid, err := bed.RuntimePID()
	if err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	if err := bed.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Logf("bed down in %v", time.Since(stopped).Round(time.Millisecond))
	checkNoTrace(t, bed, []int{pid, st.Pid})
}

func runWeb(t *testing.T, bed *testbed.Bed) (podID, ctrID string) {
	t.Helper()
	podID, ctrID, err := bed.RunPod(testbed.PodSpec{
		Name:        "web",
		Annotations: map[string]string{"probelet.io/probes": `{"web":{"readinessProbe":{"httpGet":{"port":"http"}}}}`},
		Container: testbed.ContainerSpec{
			Name:    "web",
			Command: []string{"httpd", "-f", "-p", "8080", "-h", "/var/www"},
			Env:     map[string]string{"GREETING": "hello"},
			Ports:   []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return podID, ctrID
}

// httpGet fetches the pod's index page from the host, retrying while httpd
// binds its port.
func httpGet(t *testing.T, ip string) string {
	t.Helper()
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{Proxy: nil}}
	url := fmt.Sprintf("http://%s:8080/", ip)
	var body []byte
	var err error
	// The app in the pod answers once it listens; the wait is for it.
	testutil.WaitFor(t, "GET "+url, func() bool {
		var resp *http.Response
		if resp, err = client.Get(url); err != nil {
			return false
		}
		defer resp.Body.Close()
		body, err = io.ReadAll(resp.Body)
		return true
	})
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return string(body)
}

func checkExec(t *testing.T, bed *testbed.Bed, ctrID string) {
	tests := []struct {
		cmd      []string
		wantCode int
		wantOut  string
	}{
		{[]string{"true"}, 0, ""},
		{[]string{"sh", "-c", "exit 3"}, 3, ""},
		{[]string{"false"}, 1, ""},
		{[]string{"sh", "-c", "echo $GREETING"}, 0, "hello\n"},
		{[]string{"cat", "/var/www/index.html"}, 0, indexHTML},
	}
	for _, tc := range tests {
		out, code, err := bed.Exec(ctrID, tc.cmd...)
		if err != nil {
			t.Errorf("exec %q: %v", tc.cmd, err)
			continue
		}
		if tc.wantCode == 0 {
			tc.wantOut += "\n\n" // crictl's newlines after stdout and the empty stderr
		}
		if code != tc.wantCode || string(out) != tc.wantOut {
			t.Errorf("exec %q = %q, exit %d; want %q, exit %d", tc.cmd, out, code, tc.wantOut, tc.wantCode)
		}
	}
	if _, _, err := bed.Exec("no-such-container", "true"); err == nil {
		t.Error("exec in a missing container: no error")
	}
}

// checkRestartedContainer starts a container, stops it and starts it
// again, as the kubelet restarts one: the second gets attempt 1.
func checkRestartedContainer(t *testing.T, bed *testbed.Bed, podID string) {
	spec := testbed.ContainerSpec{Name: "sleeper", Command: []string{"sleep", "3600"}}
	first, err := bed.StartContainer(podID, spec)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bed.Crictl("stop", "--timeout", "0", first); err != nil {
		t.Fatal(err)
	}
	second, err := bed.StartContainer(podID, spec)
	if err != nil {
		t.Fatal(err)
	}
	var ctr struct {
		Status struct {
			Metadata struct {
				Attempt int `json:"attempt"`
			} `json:"metadata"`
			Annotations map[string]string `json:"annotations"`
		} `json:"status"`
	}
	out, err := bed.Crictl("inspect", "-o", "json", second)
	if err == nil {
		err = json.Unmarshal(out, &ctr)
	}
	if err != nil {
		t.Fatal(err)
	}
	if ctr.Status.Metadata.Attempt != 1 || ctr.Status.Annotations["io.kubernetes.container.restartCount"] != "1" {
		t.Errorf("restarted container: attempt %d, restartCount %q; want 1", ctr.Status.Metadata.Attempt, ctr.Status.Annotations["io.kubernetes.container.restartCount"])
	}
	if st, err := bed.ContainerState(second); err != nil || st.State != testbed.StateRunning {
		t.Errorf("restarted container: %+v, %v", st, err)
	}
	if _, err := bed.StartContainer("no-such-pod", spec); err == nil {
		t.Error("StartContainer in an unknown pod: no error")
	}
}

// checkAnnotations proves the kubelet-style metadata reaches containerd.
func checkAnnotations(t *testing.T, bed *testbed.Bed, podID, ctrID string) {
	var pod, ctr struct {
		Status struct {
			Annotations map[string]string `json:"annotations"`
			Labels      map[string]string `json:"labels"`
		} `json:"status"`
	}
	for _, x := range []struct {
		v       any
		cmd, id string
	}{{&pod, "inspectp", podID}, {&ctr, "inspect", ctrID}} {
		out, err := bed.Crictl(x.cmd, "-o", "json", x.id)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(out, x.v); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]string{
		"probelet.io/probes":                       `{"web":{"readinessProbe":{"httpGet":{"port":"http"}}}}`,
		"io.kubernetes.container.ports":            `[{"name":"http","containerPort":8080,"protocol":"TCP"}]`,
		"io.kubernetes.pod.terminationGracePeriod": "30",
	}
	got := map[string]string{
		"probelet.io/probes":                       pod.Status.Annotations["probelet.io/probes"],
		"io.kubernetes.container.ports":            ctr.Status.Annotations["io.kubernetes.container.ports"],
		"io.kubernetes.pod.terminationGracePeriod": ctr.Status.Annotations["io.kubernetes.pod.terminationGracePeriod"],
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("annotation %s = %q, want %q", k, got[k], v)
		}
	}
	if ctr.Status.Labels["io.kubernetes.pod.name"] != "web" || ctr.Status.Labels["io.kubernetes.container.name"] != "web" {
		t.Errorf("container labels = %v", ctr.Status.Labels)
	}
}

// checkRestartContainerd: containerd comes back with a new PID while the
// pod keeps serving.
func checkRestartContainerd(t *testing.T, bed *testbed.Bed, ip string) {
	before, err := bed.RuntimePID()
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	if err := bed.RestartRuntime(); err != nil {
		t.Fatal(err)
	}
	t.Logf("containerd restarted in %v", time.Since(began).Round(time.Millisecond))
	after, err := bed.RuntimePID()
	if err != nil || after == before {
		t.Errorf("containerd pid %d → %d (%v), want a new process", before, after, err)
	}
	if got := httpGet(t, ip); got != indexHTML {
		t.Errorf("after the restart GET = %q", got)
	}
	if err := bed.StopRuntime(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if _, err := bed.RuntimePID(); err == nil {
		t.Error("containerd still running after SIGKILL")
	}
	if err := bed.StartRuntime(); err != nil {
		t.Fatal(err)
	}
	dialNRI(t, bed)
}

// dialNRI proves containerd listens for NRI plugins.
func dialNRI(t *testing.T, bed *testbed.Bed) {
	t.Helper()
	conn, err := net.Dial("unix", bed.NRISocket())
	if err != nil {
		t.Errorf("NRI socket: %v", err)
		return
	}
	conn.Close()
}

func checkStopRemove(t *testing.T, bed *testbed.Bed, podID, ctrID string) {
	if err := bed.StopPod(podID); err != nil {
		t.Fatal(err)
	}
	st, err := bed.ContainerState(ctrID)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != testbed.StateExited || st.FinishedAt.IsZero() || st.Pid != 0 {
		t.Errorf("after StopPod: %+v, want exited with a finish time", st)
	}
	if err := bed.RemovePod(podID); err != nil {
		t.Fatal(err)
	}
	if _, err := bed.ContainerState(ctrID); err == nil {
		t.Errorf("container %s still exists after RemovePod", ctrID)
	}
	out, err := bed.Crictl("pods", "-q")
	if err != nil || strings.TrimSpace(string(out)) != "" {
		t.Errorf("pods after RemovePod: %q, %v", out, err)
	}
}

// checkNoTrace proves Stop left nothing: no process naming the bed's dir,
// none of the given PIDs, no mount under the dir, no bridge, no cgroup, no dir.
func checkNoTrace(t *testing.T, bed *testbed.Bed, pids []int) {
	for _, pid := range pids {
		if testbed.Alive(pid) {
			t.Errorf("process %d still running", pid)
		}
	}
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range cmdlines {
		if data, err := os.ReadFile(f); err == nil && bytes.Contains(data, []byte(bed.Dir())) {
			t.Errorf("%s still names %s: %q", f, bed.Dir(), bytes.ReplaceAll(data, []byte{0}, []byte{' '}))
		}
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(mounts, []byte(bed.Dir())) {
		t.Errorf("mounts left under %s", bed.Dir())
	}
	if _, err := os.Stat("/sys/class/net/" + bed.Bridge()); err == nil {
		t.Errorf("bridge %s still exists", bed.Bridge())
	}
	if found, _ := filepath.Glob("/sys/fs/cgroup/*" + bed.CgroupParent()); len(found) > 0 {
		t.Errorf("cgroups left: %v", found)
	}
	if _, err := os.Stat(bed.Dir()); err == nil {
		t.Errorf("%s still exists", bed.Dir())
	}
}
