package testbed

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// podRecord is what the bed remembers to add containers to a pod later.
type podRecord struct {
	spec     PodSpec
	dir      string         // where its JSON configs are
	logDir   string         // the pod's log directory
	attempts map[string]int // containers created per name
}

// RunPod runs the pod sandbox and its container (create + start) and
// returns their IDs. On a container failure the pod is left running for
// inspection; Stop removes it.
func (b *Bed) RunPod(p PodSpec) (podID, containerID string, err error) {
	rec, podID, err := b.runSandbox(p, true)
	if err != nil {
		return "", "", err
	}
	containerID, err = b.startContainer(podID, rec, rec.spec.Container)
	return podID, containerID, err
}

// RunSandbox runs the pod sandbox alone (p.Container is not used) and
// returns its ID; StartContainer may add containers later.
func (b *Bed) RunSandbox(p PodSpec) (podID string, err error) {
	_, podID, err = b.runSandbox(p, false)
	return podID, err
}

func (b *Bed) runSandbox(p PodSpec, withContainer bool) (*podRecord, string, error) {
	b.mu.Lock()
	b.seq++
	p = p.withDefaults(b.seq)
	seq := b.seq
	b.mu.Unlock()
	check := p.validate
	if !withContainer {
		check = p.validateSandbox
	}
	if err := check(); err != nil {
		return nil, "", err
	}
	dir := filepath.Join(b.Dir(), "specs", strconv.Itoa(seq))
	logDir := filepath.Join(b.Dir(), "logs", fmt.Sprintf("%s_%s_%s", p.Namespace, p.Name, p.UID))
	// The kubelet makes the pod's log directory (and each container's in
	// it) before it asks the runtime; CRI-O's conmon does not.
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, "", err
	}
	if err := writeJSON(filepath.Join(dir, "pod.json"), buildPodConfig(p, logDir, b.cgroupParent)); err != nil {
		return nil, "", err
	}
	podID, err := b.crictlID("runp", filepath.Join(dir, "pod.json"))
	if err != nil {
		return nil, "", fmt.Errorf("testbed: pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	rec := &podRecord{spec: p, dir: dir, logDir: logDir, attempts: map[string]int{}}
	b.mu.Lock()
	b.pods[podID] = rec
	b.mu.Unlock()
	return rec, podID, nil
}

// StartContainer creates and starts another container in a pod made by
// RunPod, as the kubelet does on a restart: a container with a name used
// before gets the next attempt (restart count).
func (b *Bed) StartContainer(podID string, c ContainerSpec) (string, error) {
	b.mu.Lock()
	rec, ok := b.pods[podID]
	b.mu.Unlock()
	if !ok {
		return "", fmt.Errorf("testbed: pod %s was not started by RunPod", podID)
	}
	if c.Image == "" {
		c.Image = BusyboxImage
	}
	if err := c.validate("pod " + rec.spec.Namespace + "/" + rec.spec.Name); err != nil {
		return "", err
	}
	return b.startContainer(podID, rec, c)
}

func (b *Bed) startContainer(podID string, rec *podRecord, c ContainerSpec) (string, error) {
	b.mu.Lock()
	attempt := rec.attempts[c.Name]
	rec.attempts[c.Name]++
	b.mu.Unlock()
	p := rec.spec
	p.Container = c
	where := fmt.Sprintf("testbed: pod %s/%s container %s", p.Namespace, p.Name, c.Name)
	cfg, err := buildContainerConfig(p, uint32(attempt))
	if err != nil {
		return "", fmt.Errorf("%s: %w", where, err)
	}
	file := filepath.Join(rec.dir, fmt.Sprintf("%s-%d.json", c.Name, attempt))
	if err := os.MkdirAll(filepath.Join(rec.logDir, c.Name), 0o755); err != nil {
		return "", err
	}
	if err := writeJSON(file, cfg); err != nil {
		return "", err
	}
	id, err := b.crictlID("create", podID, file, filepath.Join(rec.dir, "pod.json"))
	if err != nil {
		return "", fmt.Errorf("%s: %w", where, err)
	}
	if _, err := b.Crictl("start", id); err != nil {
		return id, fmt.Errorf("%s: %w", where, err)
	}
	return id, nil
}

func writeJSON(file string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	return os.WriteFile(file, data, 0o644)
}

// PodIP returns the pod's IP on the bed's bridge, reachable from the host.
func (b *Bed) PodIP(podID string) (string, error) {
	var st struct {
		Status struct {
			Network struct {
				IP string `json:"ip"`
			} `json:"network"`
		} `json:"status"`
	}
	if err := b.inspect(&st, "inspectp", podID); err != nil {
		return "", err
	}
	if st.Status.Network.IP == "" {
		return "", fmt.Errorf("testbed: pod %s has no IP", podID)
	}
	return st.Status.Network.IP, nil
}

// PodNetNS returns the file of the pod's network namespace as the runtime
// named it in the sandbox's OCI spec (what NRI reports), else its pause
// process's /proc/PID/ns/net.
func (b *Bed) PodNetNS(podID string) (string, error) {
	var st struct {
		Info struct {
			Pid         int `json:"pid"`
			RuntimeSpec struct {
				Linux struct {
					Namespaces []struct {
						Type string `json:"type"`
						Path string `json:"path"`
					} `json:"namespaces"`
				} `json:"linux"`
			} `json:"runtimeSpec"`
		} `json:"info"`
	}
	if err := b.inspect(&st, "inspectp", podID); err != nil {
		return "", err
	}
	for _, ns := range st.Info.RuntimeSpec.Linux.Namespaces {
		if ns.Type == "network" && ns.Path != "" {
			return ns.Path, nil
		}
	}
	if st.Info.Pid > 0 {
		return fmt.Sprintf("/proc/%d/ns/net", st.Info.Pid), nil
	}
	return "", fmt.Errorf("testbed: pod %s has no network namespace in its status", podID)
}

// StopPod stops the pod's containers and sandbox as containerd's
// StopPodSandbox does: the containers are killed at once. CRI-O's instead
// waits for each container to end after SIGTERM until the call's deadline
// (busybox as pid 1 ignores SIGTERM), so on CRI-O the containers are
// stopped first with timeout 0, as the kubelet stops them before the
// sandbox.
func (b *Bed) StopPod(podID string) error {
	if b.runtime == CRIO {
		out, err := b.Crictl("ps", "--quiet", "--pod", podID)
		if err != nil {
			return err
		}
		for _, id := range strings.Fields(string(out)) {
			if _, err := b.Crictl("stop", "--timeout", "0", id); err != nil {
				return err
			}
		}
	}
	_, err := b.Crictl("stopp", podID)
	return err
}

// RemovePod stops the pod and removes it the way the kubelet does: its
// containers first, then the sandbox, which then has none. containerd
// 2.4.2 deadlocks its CRI service when an NRI plugin registers while a
// RemovePodSandbox removes containers itself (crictl rmp --force): that
// call takes NRI's plugin-sync read lock, then again in RemoveContainer,
// behind the registering plugin's waiting write lock. The kubelet's
// garbage collector never removes a sandbox that still has containers.
func (b *Bed) RemovePod(podID string) error {
	if err := b.StopPod(podID); err != nil {
		return err
	}
	out, err := b.Crictl("ps", "--all", "--quiet", "--pod", podID)
	if err != nil {
		return err
	}
	for _, id := range strings.Fields(string(out)) {
		if _, err := b.Crictl("rm", id); err != nil {
			return err
		}
	}
	if _, err := b.Crictl("rmp", podID); err != nil {
		return err
	}
	b.mu.Lock()
	delete(b.pods, podID)
	b.mu.Unlock()
	return nil
}

// inspect runs a crictl inspect command with JSON output into v.
func (b *Bed) inspect(v any, cmd, id string) error {
	out, err := b.Crictl(cmd, "-o", "json", id)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(out, v); err != nil {
		return fmt.Errorf("testbed: crictl %s %s: %w", cmd, id, err)
	}
	return nil
}
