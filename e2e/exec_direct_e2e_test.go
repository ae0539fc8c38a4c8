//go:build e2e

package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/nri/pkg/api"
	"github.com/containerd/nri/pkg/stub"
	corev1 "k8s.io/api/core/v1"

	"github.com/probelet/probelet/internal/testbed"
	"github.com/probelet/probelet/probespec"
)

// observe prints what confines a process: its credentials, capabilities,
// no_new_privs and seccomp state, cgroups, namespaces, LSM label,
// environment, working directory, rlimits, OOM score, umask, open files,
// and what a profile that denies mkdir or the user namespace does. Run
// through ExecSync and through the direct path, the output must be the
// same. Backquotes, not $(...): the kubelet expands $(VAR) in probe commands.
const observe = `exec 2>&1
grep -E '^(Uid|Gid|Groups|Cap[A-Za-z]+|NoNewPrivs|Seccomp|Seccomp_filters|Cpus_allowed_list|SigBlk|SigIgn):' /proc/self/status
echo cgroup; cat /proc/self/cgroup
for n in cgroup ipc mnt net pid pid_for_children time time_for_children user uts; do echo "ns $n ` + "`readlink /proc/self/ns/$n`" + `"; done
echo "attr ` + "`cat /proc/self/attr/current 2>&1`" + `"
echo env; env | sort
echo "cwd ` + "`pwd`" + `"
ulimit -a
echo "oom ` + "`cat /proc/self/oom_score_adj`" + `"
echo "umask ` + "`umask`" + `"
for f in /proc/self/fd/*; do echo "fd ${f##*/} ` + "`readlink $f | sed 's/:.[0-9]*.$//'`" + `"; done
mkdir /proc/self/probe
unshare -U true; echo "unshare $?"
id
true`

// rlimitsAnnotation marks containers the test's NRI plugin gives rlimits
// and an OOM score (CRI has no field for them; containerd takes them from
// NRI, or a base spec, into config.json).
const rlimitsAnnotation = "probelet-test/rlimits"

// observeTimeout is the observe probe's timeout (seconds): the script's
// forks fit in it on a loaded 2-core machine.
const observeTimeout = 20

// TestExecDirectMatchesRuntime is the equivalence matrix: for containers
// with each kind of confinement, the same exec probe command run by
// probelet's direct executor and by containerd's ExecSync prints the same
// thing, and none of them went to the runtime behind the test's back.
//
// The observe script forks some forty processes: beside the suite's
// parallel tests on two loaded cores it took longer than the default 1 s
// probe timeout, so every direct run timed out while ExecSync (no timeout)
// answered. What is compared here is output, not speed: the probe gets a
// timeout the script fits in under load, and the test runs before the
// parallel ones.
func TestExecDirectMatchesRuntime(t *testing.T) {
	bed := testbed.Start(t)
	// A user namespace's root must be able to reach its rootfs under the
	// bed, as under /run/containerd (0711); MkdirTemp made the bed 0700.
	if err := os.Chmod(bed.Dir(), 0o711); err != nil {
		t.Fatal(err)
	}
	startRlimitsPlugin(t, bed)
	profile := filepath.Join(bed.Dir(), "deny-mkdir.json")
	writeFile(t, profile, `{"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [
		{"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO", "errnoRet": 13},
		{"names": ["unshare"], "action": "SCMP_ACT_ERRNO"}]}`)
	// No --runtime-state-dir: the bed's containerd keeps its state under
	// the bed, and probelet learns where from containerd itself.
	d := startProbelet(t, bed, "--exec-mode", "direct")
	if got, want := d.logField("Direct exec reads OCI bundles", "dir"), filepath.Join(bed.Dir(), "state"); got != want {
		t.Fatalf("direct exec reads bundles from %q, want the bed's containerd state %q (learned from its CRI status)", got, want)
	}

	cases := []struct {
		name       string
		privileged bool
		userns     bool
		sc         *testbed.SecurityContext
		anno       map[string]string
	}{
		{name: "default"},
		{name: "privileged", privileged: true, sc: &testbed.SecurityContext{Privileged: true}},
		{name: "run-as", sc: &testbed.SecurityContext{RunAsUser: ptr[int64](1000), RunAsGroup: ptr[int64](3000), SupplementalGroups: []int64{4000, 5000}}},
		{name: "caps", sc: &testbed.SecurityContext{DropCapabilities: []string{"ALL"}, AddCapabilities: []string{"NET_BIND_SERVICE"}}},
		{name: "no-escalation", sc: &testbed.SecurityContext{RunAsUser: ptr[int64](1000), NoNewPrivs: true}},
		{name: "read-only", sc: &testbed.SecurityContext{ReadOnlyRootfs: true}},
		{name: "seccomp-default", sc: &testbed.SecurityContext{Seccomp: &testbed.SeccompProfile{RuntimeDefault: true}}},
		{name: "seccomp-localhost", sc: &testbed.SecurityContext{Seccomp: &testbed.SeccompProfile{Localhost: profile}}},
		{name: "rlimits", anno: map[string]string{rlimitsAnnotation: "1"}},
		{name: "userns", userns: true},
		// Without rlimits: runc sets them from outside the user namespace
		// with prlimit, which needs CAP_SYS_RESOURCE, and this machine's
		// root lacks it (runc create fails: "error setting rlimit type 7").
		{name: "everything", userns: true, sc: &testbed.SecurityContext{
			RunAsUser: ptr[int64](1000), RunAsGroup: ptr[int64](3000), SupplementalGroups: []int64{4000},
			DropCapabilities: []string{"ALL"}, AddCapabilities: []string{"NET_BIND_SERVICE"}, NoNewPrivs: true,
			ReadOnlyRootfs: true, Seccomp: &testbed.SeccompProfile{RuntimeDefault: true}}},
	}
	apps := make([]app, len(cases))
	for i, c := range cases {
		ready := execProbe(2, 1, "sh", "-c", observe)
		ready.TimeoutSeconds = observeTimeout
		probes := probespec.ContainerProbes{Readiness: ready}
		pod := testbed.PodSpec{
			Name: c.name, Privileged: c.privileged,
			Annotations: map[string]string{probespec.AnnotationProbes: mustJSON(t, probespec.PodProbes{c.name: probes})},
			Container:   testbed.ContainerSpec{Name: c.name, Command: sleeper, Security: c.sc, Annotations: c.anno},
		}
		if c.userns {
			pod.UserNamespace = &testbed.UserNamespace{HostID: 1 << 20, Length: 65536}
		}
		podID, ctrID, err := bed.RunPod(pod)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		apps[i] = app{name: c.name, pod: podID, ctr: ctrID}
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			direct := directOutput(t, d, apps[i])
			want, code, err := bed.Exec(apps[i].ctr, "sh", "-c", observe)
			if err != nil || code != 0 {
				t.Fatalf("ExecSync: exit %d, %v: %s", code, err, want)
			}
			if diff := firstDiff(strings.TrimRight(string(want), "\n"), strings.TrimRight(direct, "\n")); diff != "" {
				t.Fatalf("direct and ExecSync differ: %s\n--- ExecSync\n%s\n--- direct\n%s", diff, want, direct)
			}
			t.Logf("identical (%d lines): %s", strings.Count(direct, "\n")+1, summary(direct))
		})
	}
	if n := d.sum("probelet_exec_direct_fallbacks_total"); n != 0 {
		t.Errorf("%v probes went to the runtime; the log says why:\n%s", n, d.logTail(40))
	}
	if n := d.sum("probelet_exec_direct_total"); n < float64(len(cases)) {
		t.Errorf("the direct executor ran %v probes, want at least one per container (%d)", n, len(cases))
	}
}

// directOutput waits for a successful readiness run and returns its output.
func directOutput(t *testing.T, d *daemon, a app) string {
	t.Helper()
	var out string
	eventually(t, 3*observeTimeout*time.Second, a.name+"'s readiness run", func() (bool, string) {
		r := d.describe(a.ctr).Probes["readiness"]
		for i := len(r.History) - 1; i >= 0; i-- {
			if run := r.History[i]; run.Result == "Success" && run.Output != "" {
				out = run.Output
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v", r)
	})
	return out
}

// firstDiff names the first line where a and b differ ("" when equal).
func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range max(len(al), len(bl)) {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return fmt.Sprintf("line %d: ExecSync %q, direct %q", i+1, x, y)
		}
	}
	return ""
}

// summary picks the lines that tell the cases apart, for the log.
func summary(out string) string {
	var keep []string
	for line := range strings.SplitSeq(out, "\n") {
		for _, p := range []string{"Uid:", "CapEff:", "NoNewPrivs:", "Seccomp:", "ns user", "open files", "oom ", "unshare ", "mkdir:"} {
			if strings.HasPrefix(line, p) {
				keep = append(keep, strings.Join(strings.Fields(line), " "))
			}
		}
	}
	return strings.Join(keep, "; ")
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	s, err := jsonString(v)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// rlimitsPlugin is an NRI plugin that gives containers marked with
// rlimitsAnnotation rlimits below the node's and an OOM score adjustment.
type rlimitsPlugin struct{}

var _ stub.CreateContainerInterface = rlimitsPlugin{}

func (rlimitsPlugin) CreateContainer(_ context.Context, _ *api.PodSandbox, c *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	if c.GetAnnotations()[rlimitsAnnotation] == "" {
		return nil, nil, nil
	}
	a := &api.ContainerAdjustment{}
	a.AddRlimit("RLIMIT_NOFILE", 1024, 512)
	a.AddRlimit("RLIMIT_NPROC", 4000, 3000)
	a.AddRlimit("RLIMIT_CORE", 0, 0)
	a.AddRlimit("RLIMIT_STACK", 16<<20, 4<<20)
	oom := 500
	a.SetLinuxOomScoreAdj(&oom)
	return a, nil, nil
}

// startRlimitsPlugin registers the plugin with the bed's containerd
// before probelet (index 05).
func startRlimitsPlugin(t *testing.T, bed *testbed.Bed) {
	t.Helper()
	s, err := stub.New(rlimitsPlugin{}, stub.WithPluginName("rlimits"), stub.WithPluginIdx("05"),
		stub.WithSocketPath(bed.NRISocket()))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(context.Background()); err != nil {
		t.Fatalf("register the rlimits NRI plugin: %v", err)
	}
	t.Cleanup(s.Stop)
}

// TestExecDirectBehavesLikeExecSync: probes that fail in each way the
// runtime reports (a command not found, not executable, a non-zero exit,
// more output than the kubelet keeps, a timeout) give the same result,
// output and error through the direct executor as through ExecSync; and
// the direct path leaves nothing behind: the process tree of a command
// that timed out or was cancelled is gone, and no zombie stays in the
// container or under the helper.
func TestExecDirectBehavesLikeExecSync(t *testing.T) {
	t.Parallel()
	bed := testbed.Start(t)
	// The background sleep lets go of the output: ExecSync would read it
	// to its end (the kubelet waits 2 minutes more), and so does direct.
	slow := execProbe(2, 1, "sh", "-c", "sleep 31 >/dev/null 2>&1 & sleep 32")
	slow.TimeoutSeconds = 1
	cases := []struct {
		name  string
		probe *corev1.Probe
	}{
		{"not-found", execProbe(1, 1, "nope")},
		{"not-executable", execProbe(1, 1, "/etc/passwd")},
		{"not-found-in-shell", execProbe(1, 1, "sh", "-c", "nope")},
		{"not-executable-in-shell", execProbe(1, 1, "sh", "-c", "exec /etc/passwd")},
		{"exit-3", execProbe(1, 1, "sh", "-c", "echo out; echo err >&2; exit 3")},
		{"big-output", execProbe(1, 1, "sh", "-c", "yes 0123456789 | head -c 30000; yes abc | head -c 30000 >&2; exit 1")},
		{"timeout", slow},
	}
	apps := make([]app, len(cases))
	for i, c := range cases {
		apps[i] = runApp(t, bed, appSpec{name: c.name, cmd: sleeper, probes: probespec.ContainerProbes{Readiness: c.probe}})
	}

	// The same probes through the runtime, then through the direct path
	// (with a state directory of its own: no history carried over).
	rd := startProbelet(t, bed)
	runtime := firstRuns(t, rd, apps, true)
	rd.stop()
	// What ExecSync leaves behind on a timeout is not the direct path's.
	eventually(t, 10*time.Second, "killing what ExecSync's timed-out runs left", func() (bool, string) {
		out, _, err := bed.Exec(apps[len(apps)-1].ctr, "sh", "-c", "ps -o pid,args | awk '/sleep 3[12]$/ {print $1}' | xargs -r kill -9; ps -o pid,args")
		return err == nil && !leftover.Match(out), fmt.Sprintf("%v\n%s", err, out)
	})
	d := startProbelet(t, bed, "--exec-mode", "direct", "--runtime-state-dir", filepath.Join(bed.Dir(), "state"),
		"--state-dir", filepath.Join(bed.Dir(), "state-direct"))
	direct := firstRuns(t, d, apps, false)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, x := runtime[i], direct[i]
			if r.Result != x.Result || r.Output != x.Output || runcError(r.Error) != runcError(x.Error) {
				t.Fatalf("ExecSync: %s %q (error %q)\ndirect:   %s %q (error %q)", r.Result, r.Output, r.Error, x.Result, x.Output, x.Error)
			}
			if len(x.Output) > 10<<10 {
				t.Errorf("output of %d bytes, more than the kubelet's 10 KiB", len(x.Output))
			}
			t.Logf("identical: %s %.120q (error %q)", x.Result, x.Output, x.Error)
		})
	}
	if n := d.sum("probelet_exec_direct_fallbacks_total"); n != 0 {
		t.Errorf("%v probes went to the runtime; the log says why:\n%s", n, d.logTail(40))
	}
	noLastingZombies(t, helperPIDs(t, d))

	// Stopping probelet cancels a probe still running: its tree goes too.
	d.stop()
	for _, a := range apps {
		eventually(t, 10*time.Second, a.name+" without leftovers or zombies", func() (bool, string) {
			out, _, err := bed.Exec(a.ctr, "ps", "-o", "pid,ppid,stat,args")
			if err != nil {
				return false, err.Error()
			}
			for _, line := range strings.Split(string(out), "\n")[1:] {
				f := strings.Fields(line)
				if len(f) >= 4 && (strings.HasPrefix(f[2], "Z") || leftover.MatchString(line)) {
					return false, string(out)
				}
			}
			return true, ""
		})
	}
}

// leftover is what the timed-out probe starts.
var leftover = regexp.MustCompile(`sleep 3[12]`)

// runcError is runc's part of an exec that could not start: what
// containerd and gRPC wrap around it (with an exec ID of the runtime's
// own) the direct path does not go through.
func runcError(err string) string {
	if _, msg, ok := strings.Cut(err, "unable to start container process: "); ok {
		return msg
	}
	return err
}

// firstRuns waits until every app's readiness probe has run (and, when
// settle, until the timed-out one has run twice, so its first tree was
// killed) and returns each app's first run.
func firstRuns(t *testing.T, d *daemon, apps []app, settle bool) []runView {
	t.Helper()
	runs := make([]runView, len(apps))
	for i, a := range apps {
		eventually(t, 30*time.Second, a.name+"'s first readiness run", func() (bool, string) {
			r := d.describe(a.ctr).Probes["readiness"]
			if len(r.History) == 0 || (settle && a.name == "timeout" && len(r.History) < 2) {
				return false, fmt.Sprintf("%+v", r)
			}
			runs[i] = r.History[0]
			return true, ""
		})
	}
	return runs
}

// helperPIDs are the daemon's probelet-exec processes (the server and the
// probes it runs).
func helperPIDs(t *testing.T, d *daemon) []int {
	t.Helper()
	pids := descendants(d.cmd.Process.Pid)
	if len(pids) == 0 {
		t.Fatal("no probelet-exec process under probelet")
	}
	return pids
}

// descendants are the live processes under root.
func descendants(root int) []int {
	var pids []int
	for _, pid := range allPIDs() {
		for p := procStat(pid).ppid; p > 1; p = procStat(p).ppid {
			if p == root {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

func allPIDs() []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

type stat struct {
	ppid  int
	state string
	// start is the start time in clock ticks after boot (USER_HZ, 100).
	start int64
}

// procStat reads the state, parent and start time of pid (zero when it
// is gone).
func procStat(pid int) stat {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	i := bytes.LastIndexByte(b, ')')
	if err != nil || i < 0 {
		return stat{}
	}
	f := strings.Fields(string(b[i+1:])) // f[0] is field 3 of stat
	if len(f) < 20 {
		return stat{}
	}
	ppid, _ := strconv.Atoi(f[1])
	start, _ := strconv.ParseInt(f[19], 10, 64)
	return stat{ppid: ppid, state: f[0], start: start}
}

// noLastingZombies: a child may be a zombie between its exit and the
// helper's wait, never for two seconds.
func noLastingZombies(t *testing.T, parents []int) {
	t.Helper()
	seen := map[int]int{}
	for range 10 {
		for _, pid := range allPIDs() {
			s := procStat(pid)
			if s.state == "Z" && slices.Contains(parents, s.ppid) {
				seen[pid]++
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	for pid, n := range seen {
		if n == 10 {
			t.Errorf("process %d stayed a zombie under the exec helper", pid)
		}
	}
}

// TestExecHelperLostProbeIsSaid: the helper's process for a probe killed
// mid-command leaves that probe an error, said in the log (naming the
// container and command) and counted; the next probe runs through a fresh
// process and succeeds.
func TestExecHelperLostProbeIsSaid(t *testing.T) {
	t.Parallel()
	bed := testbed.Start(t)
	// The command outlives the poll below by far; its timeout is the
	// window the helper has to answer in.
	probe := execProbe(4, 100, "sleep", "2")
	probe.TimeoutSeconds = 10
	a := runApp(t, bed, appSpec{name: "lost", cmd: sleeper, probes: probespec.ContainerProbes{Readiness: probe}})
	d := startProbelet(t, bed, "--exec-mode", "direct", "--runtime-state-dir", filepath.Join(bed.Dir(), "state"))
	eventually(t, 30*time.Second, "the first direct run", func() (bool, string) {
		r := d.describe(a.ctr).Probes["readiness"]
		return len(r.History) > 0 && r.History[0].Result == "Success", fmt.Sprintf("%+v", r)
	})

	// Kill every helper process under the server (the probe's, outside
	// the container) while a command runs: the next period's.
	var killed []int
	eventually(t, 2*time.Duration(probe.PeriodSeconds)*time.Second, "a probe's helper process to kill", func() (bool, string) {
		pids := helperPIDs(t, d)
		for _, pid := range pids {
			comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
			if strings.TrimSpace(string(comm)) == "probelet-exec" && procStat(pid).ppid != d.cmd.Process.Pid {
				if syscall.Kill(pid, syscall.SIGKILL) == nil {
					killed = append(killed, pid)
				}
			}
		}
		return len(killed) > 0, fmt.Sprintf("helper processes %v", pids)
	})
	at := time.Now()
	t.Logf("killed the probe's helper processes %v", killed)

	eventually(t, time.Duration(probe.TimeoutSeconds)*time.Second+5*time.Second, "the lost probe in the log", func() (bool, string) {
		for _, e := range d.logsMatching("ended without its status") {
			if e.str("containerID") == a.ctr && strings.Contains(fmt.Sprint(e["command"]), "sleep") {
				return true, ""
			}
		}
		return false, d.logTail(20)
	})
	if n := d.sum("probelet_exec_direct_lost_total"); n < 1 {
		t.Errorf("probelet_exec_direct_lost_total %v, want at least 1", n)
	}
	eventually(t, 3*time.Duration(probe.PeriodSeconds)*time.Second, "a successful run after the lost one", func() (bool, string) {
		r := d.describe(a.ctr).Probes["readiness"]
		if len(r.History) == 0 {
			return false, "no runs"
		}
		last := r.History[len(r.History)-1] // oldest first
		return last.Time.After(at) && last.Result == "Success", fmt.Sprintf("%+v", r.History)
	})
	if n := d.sum("probelet_exec_direct_fallbacks_total"); n != 0 {
		t.Errorf("%v probes went to the runtime:\n%s", n, d.logTail(40))
	}
}
