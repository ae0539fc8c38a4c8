package cli

import (
	"encoding/json"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	apiv1 "github.com/probelet/probelet/api/v1alpha1"
)

// containerView is one item of `probectl ps -o json|yaml`. Its field names
// and values are a contract scripts and tests rely on (DESIGN.md): change
// them only additively.
type containerView struct {
	ContainerID    string               `json:"containerId"`
	PodName        string               `json:"podName"`
	PodNamespace   string               `json:"podNamespace"`
	PodUID         string               `json:"podUid"`
	PodSandboxID   string               `json:"podSandboxId"`
	ContainerName  string               `json:"containerName"`
	Image          string               `json:"image"`
	State          string               `json:"state"`
	CreatedAt      *time.Time           `json:"createdAt"`
	StartedAt      *time.Time           `json:"startedAt"`
	Started        bool                 `json:"started"`
	Ready          bool                 `json:"ready"`
	SpecError      string               `json:"specError,omitempty"`
	Unavailable    string               `json:"unavailable,omitempty"` // kubectl probelet: the pod's node did not answer
	RestartsIssued int                  `json:"restartsIssued"`
	Probes         map[string]probeView `json:"probes"`
}

// probeView is one configured probe in containerView.probes, keyed
// liveness, readiness or startup.
type probeView struct {
	Result           string     `json:"result"`
	Consecutive      int32      `json:"consecutive"`
	LastProbeTime    *time.Time `json:"lastProbeTime"`
	LastOutput       string     `json:"lastOutput"`
	Method           string     `json:"method"`
	Origin           string     `json:"origin,omitempty"`
	OnHold           bool       `json:"onHold"`
	KillDeferred     string     `json:"killDeferred,omitempty"`
	SuccessThreshold int32      `json:"successThreshold"`
	FailureThreshold int32      `json:"failureThreshold"`
	Handler          string     `json:"handler"`
}

// detailView is `probectl describe -o json|yaml`.
type detailView struct {
	containerView
	Probes   map[string]probeDetailView `json:"probes"`
	Restarts []restartView              `json:"restarts"`
	Events   []eventView                `json:"events"`
}

type probeDetailView struct {
	probeView
	Spec    json.RawMessage `json:"spec,omitempty"`
	History []runView       `json:"history"`
}

type runView struct {
	Time     *time.Time `json:"time"`
	Result   string     `json:"result"`
	Duration string     `json:"duration"`
	Output   string     `json:"output"`
	Method   string     `json:"method"`
	Error    string     `json:"error,omitempty"`
}

type restartView struct {
	Time        *time.Time `json:"time"`
	ContainerID string     `json:"containerId"`
	Probe       string     `json:"probe"`
	GracePeriod string     `json:"gracePeriod"`
	Message     string     `json:"message"`
	Error       string     `json:"error,omitempty"`
}

type eventView struct {
	Time          *time.Time `json:"time"`
	Type          string     `json:"type"`
	Reason        string     `json:"reason"`
	Message       string     `json:"message"`
	PodNamespace  string     `json:"podNamespace"`
	PodName       string     `json:"podName"`
	ContainerName string     `json:"containerName"`
	ContainerID   string     `json:"containerId"`
	Probe         string     `json:"probe"`
}

type resultChangeView struct {
	Time          *time.Time `json:"time"`
	PodNamespace  string     `json:"podNamespace"`
	PodName       string     `json:"podName"`
	ContainerName string     `json:"containerName"`
	ContainerID   string     `json:"containerId"`
	Probe         string     `json:"probe"`
	Result        string     `json:"result"`
	Output        string     `json:"output"`
}

func timeOf(ts *timestamppb.Timestamp) *time.Time {
	if ts == nil {
		return nil
	}
	t := ts.AsTime()
	return &t
}

// resultString is the JSON spelling: Success, Failure, Unknown.
func resultString(r apiv1.Result) string {
	switch r {
	case apiv1.Result_RESULT_SUCCESS:
		return "Success"
	case apiv1.Result_RESULT_FAILURE:
		return "Failure"
	}
	return "Unknown"
}

// methodString is "ebpf", "dial", "http", "grpc", "exec" or "".
func methodString(m apiv1.Method) string {
	if m == apiv1.Method_METHOD_UNSPECIFIED {
		return ""
	}
	return strings.ToLower(strings.TrimPrefix(m.String(), "METHOD_"))
}

// probeKey is "liveness", "readiness" or "startup".
func probeKey(t apiv1.ProbeType) string {
	if t == apiv1.ProbeType_PROBE_TYPE_UNSPECIFIED {
		return ""
	}
	return strings.ToLower(strings.TrimPrefix(t.String(), "PROBE_TYPE_"))
}

// stateString is CRI's spelling, e.g. CONTAINER_RUNNING.
func stateString(s apiv1.ContainerState) string {
	return "CONTAINER_" + strings.TrimPrefix(s.String(), "CONTAINER_STATE_")
}

func newContainerView(c *apiv1.Container) containerView {
	v := containerView{
		ContainerID: c.ContainerId, PodName: c.PodName, PodNamespace: c.PodNamespace, PodUID: c.PodUid,
		PodSandboxID: c.PodSandboxId, ContainerName: c.ContainerName, Image: c.Image, State: stateString(c.State),
		CreatedAt: timeOf(c.CreatedAt), StartedAt: timeOf(c.StartedAt), Started: c.Started, Ready: c.Ready,
		SpecError: c.SpecError, Unavailable: c.Unavailable, RestartsIssued: len(c.Restarts), Probes: map[string]probeView{},
	}
	for _, p := range c.Probes {
		v.Probes[probeKey(p.Type)] = newProbeView(p)
	}
	return v
}

func newProbeView(p *apiv1.Probe) probeView {
	return probeView{
		Result: resultString(p.Result), Consecutive: p.Consecutive, LastProbeTime: timeOf(p.LastProbeTime),
		LastOutput: p.LastOutput, Method: methodString(p.Method), Origin: p.Origin, OnHold: p.OnHold, KillDeferred: p.KillDeferred,
		SuccessThreshold: p.GetSpec().GetSuccessThreshold(), FailureThreshold: p.GetSpec().GetFailureThreshold(),
		Handler: p.GetSpec().GetHandler(),
	}
}

func newDetailView(c *apiv1.Container, events []*apiv1.Event) detailView {
	v := detailView{containerView: newContainerView(c), Probes: map[string]probeDetailView{},
		Restarts: []restartView{}, Events: []eventView{}}
	for _, p := range c.Probes {
		d := probeDetailView{probeView: newProbeView(p), History: []runView{}}
		if js := p.GetSpec().GetJson(); js != "" {
			d.Spec = json.RawMessage(js)
		}
		for _, r := range p.History {
			d.History = append(d.History, newRunView(r))
		}
		v.Probes[probeKey(p.Type)] = d
	}
	for _, r := range c.Restarts {
		v.Restarts = append(v.Restarts, newRestartView(r))
	}
	for _, e := range events {
		v.Events = append(v.Events, newEventView(e))
	}
	return v
}

func newRunView(r *apiv1.ProbeRun) runView {
	return runView{Time: timeOf(r.Time), Result: resultString(r.Result), Duration: r.GetDuration().AsDuration().String(),
		Output: r.Output, Method: methodString(r.Method), Error: r.Error}
}

func newRestartView(r *apiv1.Restart) restartView {
	return restartView{Time: timeOf(r.Time), ContainerID: r.ContainerId, Probe: probeKey(r.ProbeType),
		GracePeriod: r.GetGracePeriod().AsDuration().String(), Message: r.Message, Error: r.Error}
}

func newEventView(e *apiv1.Event) eventView {
	return eventView{Time: timeOf(e.Time), Type: e.Type, Reason: e.Reason, Message: e.Message,
		PodNamespace: e.PodNamespace, PodName: e.PodName, ContainerName: e.ContainerName,
		ContainerID: e.ContainerId, Probe: probeKey(e.ProbeType)}
}

func newResultChangeView(rc *apiv1.ResultChange) resultChangeView {
	return resultChangeView{Time: timeOf(rc.Time), PodNamespace: rc.PodNamespace, PodName: rc.PodName,
		ContainerName: rc.ContainerName, ContainerID: rc.ContainerId, Probe: probeKey(rc.ProbeType),
		Result: resultString(rc.Result), Output: rc.Output}
}
