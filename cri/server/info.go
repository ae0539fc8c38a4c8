package server

import (
	"encoding/json"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/prober"
	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/probespec"
)

// Keys of the verbose info maps. crictl decodes values that start with
// "{" as JSON objects and shows them under these keys.
const (
	infoKeyInfo     = "info"
	infoKeyProbelet = "probelet"
)

// containerInfo is the probe state in ContainerStatus's verbose info. Its
// probe fields use the names and values of probectl's JSON.
type containerInfo struct {
	Started   bool                 `json:"started"`
	Ready     bool                 `json:"ready"`
	SpecError string               `json:"specError,omitempty"`
	Probes    map[string]probeInfo `json:"probes"`
	Restarts  []restartInfo        `json:"restarts"`
}

type probeInfo struct {
	Result           string        `json:"result"`
	Consecutive      int           `json:"consecutive"`
	SuccessThreshold int32         `json:"successThreshold"`
	FailureThreshold int32         `json:"failureThreshold"`
	OnHold           bool          `json:"onHold"`
	KillDeferred     string        `json:"killDeferred,omitempty"`
	LastProbeTime    *time.Time    `json:"lastProbeTime"`
	LastOutput       string        `json:"lastOutput"`
	Method           probe.Method  `json:"method"`
	Origin           string        `json:"origin,omitempty"`
	Spec             *corev1.Probe `json:"spec,omitempty"`
	Recent           []runInfo     `json:"recent"`
}

type runInfo struct {
	Time     time.Time    `json:"time"`
	Result   string       `json:"result"`
	Duration string       `json:"duration"`
	Output   string       `json:"output"`
	Method   probe.Method `json:"method"`
	Error    string       `json:"error,omitempty"`
}

type restartInfo struct {
	Time        time.Time `json:"time"`
	ContainerID string    `json:"containerId"`
	Probe       string    `json:"probe"`
	GracePeriod string    `json:"gracePeriod"`
	Message     string    `json:"message"`
	Error       string    `json:"error,omitempty"`
}

// runtimeInfo is the "info" key, shaped like containerd's for the fields
// templates commonly read (.info.pid, .info.sandboxID).
type runtimeInfo struct {
	SandboxID string `json:"sandboxID"`
	Pid       uint32 `json:"pid"`
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// containerVerboseInfo builds ContainerStatus's verbose info map.
func containerVerboseInfo(e entry) (map[string]string, error) {
	ci := containerInfo{Started: e.started(), Ready: e.ready(), Probes: map[string]probeInfo{}, Restarts: []restartInfo{}}
	if st := e.status; st != nil {
		ci.SpecError = st.SpecError
		for _, t := range st.Configured() {
			ci.Probes[t.Key()] = newProbeInfo(st, t)
		}
		for _, r := range st.Restarts {
			ci.Restarts = append(ci.Restarts, restartInfo{
				Time: r.Time, ContainerID: r.ContainerID, Probe: r.ProbeType.Key(),
				GracePeriod: r.GracePeriod.String(), Message: r.Message, Error: r.Err,
			})
		}
	}
	return encodeInfo(map[string]any{
		infoKeyInfo:     runtimeInfo{SandboxID: e.pod.SandboxID, Pid: e.ctr.Pid},
		infoKeyProbelet: ci,
	})
}

func newProbeInfo(st *prober.ContainerStatus, t probespec.Type) probeInfo {
	ps := st.Probes[t]
	pi := probeInfo{
		Result: ps.Result.Name(), Consecutive: ps.Consecutive,
		SuccessThreshold: ps.SuccessThreshold, FailureThreshold: ps.FailureThreshold,
		OnHold: ps.OnHold, KillDeferred: ps.KillDeferred, LastProbeTime: timePtr(ps.LastProbeTime), LastOutput: ps.LastOutput,
		Method: ps.Method, Origin: ps.Origin, Spec: st.Spec.Get(t), Recent: []runInfo{},
	}
	for _, r := range ps.History {
		pi.Recent = append(pi.Recent, runInfo{
			Time: r.Time, Result: r.Result.Name(), Duration: r.Duration.String(),
			Output: r.Output, Method: r.Method, Error: r.Error,
		})
	}
	return pi
}

// sandboxInfo is the "probelet" key of PodSandboxStatus's verbose info.
type sandboxInfo struct {
	UID                           string            `json:"uid"`
	NetNSPath                     string            `json:"netnsPath,omitempty"`
	Deleting                      bool              `json:"deleting"`
	TerminationGracePeriodSeconds *int64            `json:"terminationGracePeriodSeconds,omitempty"`
	SpecErrors                    map[string]string `json:"specErrors,omitempty"`
	Containers                    []sandboxMember   `json:"containers"`
}

type sandboxMember struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	State   string `json:"state"`
	Started bool   `json:"started"`
	Ready   bool   `json:"ready"`
}

func sandboxVerboseInfo(p *node.Pod, members []entry) (map[string]string, error) {
	// An unreadable grace annotation shows as none here; the engine logs it
	// when a kill needs it.
	grace, _ := probespec.PodGrace(p)
	si := sandboxInfo{
		UID: p.UID, NetNSPath: p.NetNSPath, Deleting: p.Deleting,
		TerminationGracePeriodSeconds: grace, Containers: []sandboxMember{},
	}
	for _, e := range members {
		if e.status != nil && e.status.SpecError != "" {
			if si.SpecErrors == nil {
				si.SpecErrors = map[string]string{}
			}
			si.SpecErrors[e.ctr.Name] = e.status.SpecError
		}
		si.Containers = append(si.Containers, sandboxMember{
			ID: e.ctr.ID, Name: e.ctr.Name, State: e.ctr.State.String(), Started: e.started(), Ready: e.ready(),
		})
	}
	return encodeInfo(map[string]any{infoKeyProbelet: si})
}

// encodeInfo marshals each value of a verbose info map to JSON.
func encodeInfo(values map[string]any) (map[string]string, error) {
	out := make(map[string]string, len(values))
	for k, v := range values {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		out[k] = string(b)
	}
	return out, nil
}
