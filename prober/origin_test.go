//go:build linux

package prober_test

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/probelet/probelet/internal/testutil"
	"github.com/probelet/probelet/internal/testutil/netnstest"
	"github.com/probelet/probelet/podnet"
	"github.com/probelet/probelet/prober"
	"github.com/probelet/probelet/probespec"
)

func newPins(t *testing.T) *podnet.Pins {
	t.Helper()
	p, err := podnet.NewPins()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Where each pod's probes connect from: the node's --probe-origin, the
// pod's own annotation over it, hostNetwork pods from the node always, and
// a pod origin that cannot be had a prober error with nothing dialled.
func TestProbeOriginPerPod(t *testing.T) {
	podNS := netnstest.New(t)
	podNS.AddAddress(t, "10.0.0.5/32") // testPod's IP
	strangerNS := netnstest.New(t)     // another pod's, say
	for _, tc := range []struct {
		name        string
		nodeOrigin  probespec.Origin
		annotation  string // "" for none
		hostNetwork bool
		netnsPath   string
		// wantPod: dialled from podNS; wantText: status's Origin begins
		// so; wantErr: not dialled, the run's error says so.
		wantPod  bool
		wantText string
		wantErr  string
	}{
		{name: "the kubelet's way by default", nodeOrigin: probespec.OriginNode, netnsPath: podNS.Path, wantText: "node"},
		{name: "a pod asks for its own", nodeOrigin: probespec.OriginNode, annotation: "pod", netnsPath: podNS.Path, wantPod: true, wantText: "pod net:["},
		{name: "the node asks for the pod's", nodeOrigin: probespec.OriginPod, netnsPath: podNS.Path, wantPod: true, wantText: "pod net:["},
		{name: "a pod opts out", nodeOrigin: probespec.OriginPod, annotation: "node", netnsPath: podNS.Path, wantText: "node"},
		{name: "hostNetwork is the node's", nodeOrigin: probespec.OriginPod, hostNetwork: true, netnsPath: "/proc/self/ns/net",
			wantText: "node (hostNetwork"},
		{name: "hostNetwork with an invalid annotation", nodeOrigin: probespec.OriginPod, annotation: "sideways", hostNetwork: true,
			netnsPath: "/proc/self/ns/net", wantText: "node (hostNetwork"},
		{name: "an invalid annotation", nodeOrigin: probespec.OriginPod, annotation: "sideways", netnsPath: podNS.Path, wantPod: true,
			wantText: `pod net:[`},
		{name: "an invalid annotation on a node-origin node", nodeOrigin: probespec.OriginNode, annotation: "Pod", netnsPath: podNS.Path,
			wantText: `node (annotation probelet.io/probe-origin: "Pod" is not "node" or "pod"`},
		{name: "the namespace is not known yet", nodeOrigin: probespec.OriginPod, wantText: "pod", wantErr: "not known yet"},
		{name: "a sandbox naming the node's namespace", nodeOrigin: probespec.OriginPod, netnsPath: "/proc/self/ns/net",
			wantText: "pod", wantErr: "is the node's network namespace"},
		{name: "a sandbox naming a namespace without its address", nodeOrigin: probespec.OriginPod, netnsPath: strangerNS.Path,
			wantText: "pod", wantErr: "does not hold the pod's address 10.0.0.5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pins := newPins(t)
			h := newHarness(t, prober.WithProbeOrigin(tc.nodeOrigin, pins, nil))
			pod := testPod("c1", probespec.ContainerProbes{Readiness: tcpProbe(8080)})
			pod.Annotations = maps.Clone(pod.Annotations)
			if tc.annotation != "" {
				pod.Annotations[probespec.AnnotationProbeOrigin] = tc.annotation
			}
			pod.HostNetwork, pod.NetNSPath, pod.SandboxID = tc.hostNetwork, tc.netnsPath, "sandbox-1"
			h.update(pod)

			targets := h.tcp.seenTargets()
			st, _ := h.m.Container("c1")
			ps := st.Probes[probespec.Readiness]
			if !strings.HasPrefix(ps.Origin, tc.wantText) {
				t.Errorf("status origin %q, want it to begin %q", ps.Origin, tc.wantText)
			}
			if tc.wantErr != "" {
				if len(targets) != 0 {
					t.Fatalf("dialled %v; want nothing dialled", targets)
				}
				if n := len(ps.History); n == 0 || !strings.Contains(ps.History[n-1].Error, tc.wantErr) {
					t.Fatalf("runs %+v; want the last to error with %q", ps.History, tc.wantErr)
				}
				return
			}
			if len(targets) == 0 {
				t.Fatal("nothing was dialled")
			}
			got := targets[0].Origin
			if (got != nil) != tc.wantPod {
				t.Fatalf("dialled from %v, want from the pod: %v", got, tc.wantPod)
			}
			if ns, ok := got.(*podnet.Namespace); got != nil && (!ok || ns.Path() != podNS.Path) {
				t.Fatalf("dialled from %#v, want %s", got, podNS.Path)
			}
		})
	}
}

// A pod's namespace is pinned while the pod lives, released with it, and a
// sandbox whose namespace path comes to name another namespace is refused
// for good rather than probed from either.
func TestProbeOriginNamespaceLifecycle(t *testing.T) {
	podNS, otherNS := netnstest.New(t), netnstest.New(t)
	podNS.AddAddress(t, "10.0.0.5/32") // testPod's IP
	otherNS.AddAddress(t, "10.0.0.5/32")
	pins := newPins(t)
	h := newHarness(t, prober.WithProbeOrigin(probespec.OriginPod, pins, nil))
	pod := testPod("c1", probespec.ContainerProbes{Readiness: tcpProbe(8080, withPeriod(1))})
	pod.NetNSPath, pod.SandboxID = podNS.Path, "sandbox-1"
	h.update(pod)
	if pinned := pins.Pinned(); pinned != 1 {
		t.Fatalf("%d namespaces pinned, want 1", pinned)
	}

	moved := pod
	moved.NetNSPath = otherNS.Path
	h.update(moved)
	before := len(h.tcp.seenTargets())
	h.step(3 * time.Second)
	if n := len(h.tcp.seenTargets()); n != before {
		t.Fatalf("%d probes dialled after the sandbox's namespace changed", n-before)
	}
	st, _ := h.m.Container("c1")
	runs := st.Probes[probespec.Readiness].History
	if n := len(runs); n == 0 || !strings.Contains(runs[n-1].Error, "network namespace changed") {
		t.Fatalf("runs %+v; want the change refused", runs)
	}
	h.update(pod) // and back: still refused
	h.step(2 * time.Second)
	if n := len(h.tcp.seenTargets()); n != before {
		t.Fatalf("%d probes dialled after the namespace came back", n-before)
	}

	// A new sandbox of the pod (the old one died) is pinned afresh.
	recreated := moved
	recreated.SandboxID = "sandbox-2"
	h.update(recreated)
	h.step(2 * time.Second)
	if n := len(h.tcp.seenTargets()); n == before {
		t.Fatal("nothing dialled from the pod's new sandbox")
	}
	if got := h.tcp.seenTargets()[len(h.tcp.seenTargets())-1].Origin.(*podnet.Namespace).Path(); got != otherNS.Path {
		t.Fatalf("the new sandbox's probes came from %s, want %s", got, otherNS.Path)
	}

	h.m.RemovePod(pod.UID)
	h.settle()
	// Released off the engine's lock, at once.
	testutil.WaitFor(t, "the pod's namespace released", func() bool { return pins.Pinned() == 0 })
}

// A pod origin that failed is tried again at the next run: here the
// namespace gets the pod's address only after the first probe (as a CNI
// still setting up would give it), with no update of the pod.
func TestProbeOriginFailureIsTriedAgain(t *testing.T) {
	podNS := netnstest.New(t)
	h := newHarness(t, prober.WithProbeOrigin(probespec.OriginPod, newPins(t), nil))
	pod := testPod("c1", probespec.ContainerProbes{Readiness: tcpProbe(8080, withPeriod(1))})
	pod.NetNSPath, pod.SandboxID = podNS.Path, "sandbox-1"
	h.update(pod)
	if n := len(h.tcp.seenTargets()); n != 0 {
		t.Fatalf("%d probes dialled from a namespace without the pod's address", n)
	}
	podNS.AddAddress(t, "10.0.0.5/32")
	h.step(2 * time.Second)
	if len(h.tcp.seenTargets()) == 0 {
		t.Fatal("nothing dialled once the namespace held the pod's address")
	}
}

// A preStop httpGet hook connects from where the pod's probes do: the
// kill carries the pod's namespace for it.
func TestPreStopHookFromTheProbesOrigin(t *testing.T) {
	podNS := netnstest.New(t)
	podNS.AddAddress(t, "10.0.0.5/32")
	for _, tc := range []struct {
		name      string
		origin    probespec.Origin
		netnsPath string
		wantFrom  string // the namespace's path, "" for the node's
		wantErr   string
	}{
		{"from the pod's namespace", probespec.OriginPod, podNS.Path, podNS.Path, ""},
		{"from the node", probespec.OriginNode, podNS.Path, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, prober.WithProbeOrigin(tc.origin, newPins(t), nil))
			pod := testPod("c1", probespec.ContainerProbes{Liveness: failingLiveness(h)})
			pod.NetNSPath, pod.SandboxID = tc.netnsPath, "sandbox-1"
			pod.Containers[0].Annotations = map[string]string{probespec.AnnotationPreStopHandler: `{"httpGet":{"path":"/drain","port":8080}}`}
			h.update(pod)
			h.killer.mu.Lock()
			hooks := h.killer.preStops
			h.killer.mu.Unlock()
			if len(hooks) != 1 || hooks[0] == nil {
				t.Fatalf("hooks %v, want one", hooks)
			}
			hook := hooks[0]
			from := ""
			hctx, err := hook.Context(context.Background())
			if err != nil {
				t.Fatalf("the hook's context: %v", err)
			}
			if ns := podnet.FromContext(hctx); ns != nil {
				from = ns.Path()
			}
			if from != tc.wantFrom {
				t.Errorf("the hook connects from %q, want %q", from, tc.wantFrom)
			}
			if (tc.wantErr == "") != (hook.Err == nil) || (hook.Err != nil && !strings.Contains(hook.Err.Error(), tc.wantErr)) {
				t.Errorf("hook error %v, want %q", hook.Err, tc.wantErr)
			}
		})
	}
}
