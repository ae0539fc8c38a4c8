package server

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	corev1 "k8s.io/api/core/v1"

	apiv1 "github.com/probelet/probelet/api/v1alpha1"
	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/prober"
	"github.com/probelet/probelet/prober/explain"
	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/prober/results"
	"github.com/probelet/probelet/probespec"
)

func pbTime(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

func pbProbeType(t probespec.Type) apiv1.ProbeType {
	switch t {
	case probespec.Liveness:
		return apiv1.ProbeType_PROBE_TYPE_LIVENESS
	case probespec.Readiness:
		return apiv1.ProbeType_PROBE_TYPE_READINESS
	case probespec.Startup:
		return apiv1.ProbeType_PROBE_TYPE_STARTUP
	}
	return apiv1.ProbeType_PROBE_TYPE_UNSPECIFIED
}

func pbResult(r results.Result) apiv1.Result {
	switch r {
	case results.Success:
		return apiv1.Result_RESULT_SUCCESS
	case results.Failure:
		return apiv1.Result_RESULT_FAILURE
	}
	return apiv1.Result_RESULT_UNKNOWN
}

func pbMethod(m probe.Method) apiv1.Method {
	switch m {
	case probe.MethodHTTP:
		return apiv1.Method_METHOD_HTTP
	case probe.MethodGRPC:
		return apiv1.Method_METHOD_GRPC
	case probe.MethodExec:
		return apiv1.Method_METHOD_EXEC
	case probe.MethodDial:
		return apiv1.Method_METHOD_DIAL
	case probe.MethodEBPF:
		return apiv1.Method_METHOD_EBPF
	}
	return apiv1.Method_METHOD_UNSPECIFIED
}

func pbState(s node.ContainerState) apiv1.ContainerState {
	switch s {
	case node.StateCreated:
		return apiv1.ContainerState_CONTAINER_STATE_CREATED
	case node.StateRunning:
		return apiv1.ContainerState_CONTAINER_STATE_RUNNING
	case node.StateExited:
		return apiv1.ContainerState_CONTAINER_STATE_EXITED
	}
	return apiv1.ContainerState_CONTAINER_STATE_UNKNOWN
}

// pbContainer converts an entry. history is how many recent runs to keep
// per probe: 0 none, negative all.
func pbContainer(e entry, history int) *apiv1.Container {
	c := &apiv1.Container{
		ContainerId: e.ctr.ID, ContainerName: e.ctr.Name,
		PodName: e.podName(), PodNamespace: e.namespace(), PodUid: e.pod.UID, PodSandboxId: e.pod.SandboxID,
		Image: e.ctr.Image, State: pbState(e.ctr.State),
		CreatedAt: pbTime(e.ctr.CreatedAt), StartedAt: pbTime(e.ctr.StartedAt), FinishedAt: pbTime(e.ctr.FinishedAt),
		ExitCode: e.ctr.ExitCode, Started: e.started(), Ready: e.ready(),
	}
	if e.status == nil {
		return c
	}
	c.SpecError = e.status.SpecError
	for _, t := range e.status.Configured() {
		c.Probes = append(c.Probes, pbProbe(e.status, t, history))
	}
	for _, r := range e.status.Restarts {
		c.Restarts = append(c.Restarts, pbRestart(r))
	}
	return c
}

func pbProbe(st *prober.ContainerStatus, t probespec.Type, history int) *apiv1.Probe {
	ps := st.Probes[t]
	p := &apiv1.Probe{
		Type: pbProbeType(t), Spec: pbProbeSpec(st.Spec.Get(t)),
		Result: pbResult(ps.Result), Consecutive: int32(ps.Consecutive), OnHold: ps.OnHold,
		LastProbeTime: pbTime(ps.LastProbeTime), LastOutput: ps.LastOutput, Method: pbMethod(ps.Method),
		KillDeferred: ps.KillDeferred, KillDeferredSince: pbTime(ps.KillDeferredSince), Origin: ps.Origin,
	}
	runs := ps.History
	if history >= 0 && len(runs) > history {
		runs = runs[len(runs)-history:]
	}
	for _, r := range runs {
		p.History = append(p.History, pbRun(r))
	}
	return p
}

func pbRun(r prober.ProbeRecord) *apiv1.ProbeRun {
	return &apiv1.ProbeRun{
		Time: pbTime(r.Time), Result: pbResult(r.Result), Duration: durationpb.New(r.Duration),
		Output: r.Output, Method: pbMethod(r.Method), Error: r.Error,
	}
}

func pbRestart(r prober.Restart) *apiv1.Restart {
	return &apiv1.Restart{
		Time: pbTime(r.Time), ContainerId: r.ContainerID, ProbeType: pbProbeType(r.ProbeType),
		GracePeriod: durationpb.New(r.GracePeriod), Message: r.Message, Error: r.Err,
	}
}

func pbEvent(ev prober.Event) *apiv1.Event {
	pb := &apiv1.Event{
		Time: pbTime(ev.Time), Type: ev.Type, Reason: ev.Reason, Message: ev.Message,
		PodUid: ev.PodUID, PodName: ev.PodName, PodNamespace: ev.PodNamespace,
		ContainerName: ev.ContainerName, ContainerId: ev.ContainerID, ProbeType: pbProbeType(ev.ProbeType),
	}
	if ev.ContainerName == "" {
		pb.ProbeType = apiv1.ProbeType_PROBE_TYPE_UNSPECIFIED // an event about the pod (ProbeSpecChanged)
	}
	return pb
}

func pbResultChange(rc prober.ResultChange) *apiv1.ResultChange {
	return &apiv1.ResultChange{
		Time: pbTime(rc.Time), PodUid: rc.PodUID, PodName: rc.PodName, PodNamespace: rc.PodNamespace,
		ContainerName: rc.ContainerName, ContainerId: rc.ContainerID,
		ProbeType: pbProbeType(rc.Type), Result: pbResult(rc.Result), Output: rc.Output,
	}
}

// pbProbeSpec converts a defaulted spec; nil stays nil.
func pbProbeSpec(p *corev1.Probe) *apiv1.ProbeSpec {
	if p == nil {
		return nil
	}
	js, _ := json.Marshal(p) // a corev1.Probe always marshals
	return &apiv1.ProbeSpec{
		Handler:                       handlerSummary(p.ProbeHandler),
		InitialDelaySeconds:           p.InitialDelaySeconds,
		TimeoutSeconds:                p.TimeoutSeconds,
		PeriodSeconds:                 p.PeriodSeconds,
		SuccessThreshold:              p.SuccessThreshold,
		FailureThreshold:              p.FailureThreshold,
		TerminationGracePeriodSeconds: p.TerminationGracePeriodSeconds,
		Json:                          string(js),
	}
}

// handlerSummary describes a handler the way kubectl describe does.
func handlerSummary(h corev1.ProbeHandler) string {
	switch {
	case h.HTTPGet != nil:
		scheme := strings.ToLower(string(h.HTTPGet.Scheme))
		if scheme == "" {
			scheme = "http"
		}
		return fmt.Sprintf("http-get %s://%s:%s%s", scheme, h.HTTPGet.Host, h.HTTPGet.Port.String(), h.HTTPGet.Path)
	case h.TCPSocket != nil:
		return fmt.Sprintf("tcp-socket %s:%s", h.TCPSocket.Host, h.TCPSocket.Port.String())
	case h.GRPC != nil:
		svc := ""
		if h.GRPC.Service != nil {
			svc = *h.GRPC.Service
		}
		return strings.TrimSpace(fmt.Sprintf("grpc :%d %s", h.GRPC.Port, svc))
	case h.Exec != nil:
		return fmt.Sprintf("exec %v", h.Exec.Command)
	}
	return "unknown"
}

// explanations answers probectl why for entry e.
func explanations(e entry) []*apiv1.Explanation {
	xs := explain.Container(explain.Subject{Namespace: e.namespace(), Pod: e.podName(), Container: e.ctr, Status: e.status})
	out := make([]*apiv1.Explanation, len(xs))
	for i, x := range xs {
		pb := &apiv1.Explanation{Subject: x.Subject, Text: x.Text, Consecutive: x.Consecutive, Threshold: x.Threshold}
		if x.HasProbe {
			pb.ProbeType = pbProbeType(x.ProbeType)
		}
		for _, r := range x.LastRuns {
			pb.LastRuns = append(pb.LastRuns, pbRun(r))
		}
		for _, r := range x.Restarts {
			pb.Restarts = append(pb.Restarts, pbRestart(r))
		}
		out[i] = pb
	}
	return out
}
