// Package convert turns a node's answer (probelet's own API, the proto
// of api/v1alpha1) into the probe-state API's types (api/probes/v1alpha1)
// and back. The controller converts what nodes answer; kubectl-probelet
// converts what the API answers back, so that it prints it with probectl's
// own words. Both ways are lossless for everything the API carries (all
// but the sandbox ID and the probe spec's full JSON, which the API gives
// as its numbers and a one-line handler).
package convert

import (
	"strings"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	probes "github.com/probelet/probelet/api/probes/v1alpha1"
	apiv1 "github.com/probelet/probelet/api/v1alpha1"
)

// Container is the API's form of one container of a node's ListExplained.
func Container(w *apiv1.WhyResponse) probes.ContainerProbes {
	c := w.GetContainer()
	out := probes.ContainerProbes{
		Name: c.GetContainerName(), ContainerID: c.GetContainerId(), Image: c.GetImage(), State: State(c.GetState()),
		CreatedAt: metaTime(c.GetCreatedAt()), StartedAt: metaTime(c.GetStartedAt()), FinishedAt: metaTime(c.GetFinishedAt()),
		ExitCode: c.GetExitCode(), Started: c.GetStarted(), Ready: c.GetReady(), SpecError: c.GetSpecError(),
	}
	for _, p := range c.GetProbes() {
		out.Probes = append(out.Probes, probe(p))
	}
	out.Restarts = restarts(c.GetRestarts())
	for _, x := range w.GetExplanations() {
		out.Explanations = append(out.Explanations, probes.Explanation{Subject: x.GetSubject(), ProbeType: ProbeType(x.GetProbeType()),
			Text: x.GetText(), Consecutive: x.GetConsecutive(), Threshold: x.GetThreshold(),
			LastRuns: runs(x.GetLastRuns()), Restarts: restarts(x.GetRestarts())})
	}
	return out
}

func probe(p *apiv1.Probe) probes.Probe {
	out := probes.Probe{Type: ProbeType(p.GetType()), Result: Result(p.GetResult()), Consecutive: p.GetConsecutive(),
		OnHold: p.GetOnHold(), LastProbeTime: metaTime(p.GetLastProbeTime()), LastOutput: p.GetLastOutput(),
		Method: Method(p.GetMethod()), Origin: p.GetOrigin(), History: runs(p.GetHistory()), KillDeferred: p.GetKillDeferred(),
		KillDeferredSince: metaTime(p.GetKillDeferredSince())}
	if s := p.GetSpec(); s != nil {
		out.Spec = probes.ProbeSpec{Handler: s.GetHandler(), InitialDelaySeconds: s.GetInitialDelaySeconds(),
			TimeoutSeconds: s.GetTimeoutSeconds(), PeriodSeconds: s.GetPeriodSeconds(), SuccessThreshold: s.GetSuccessThreshold(),
			FailureThreshold: s.GetFailureThreshold(), TerminationGracePeriodSeconds: s.TerminationGracePeriodSeconds}
	}
	return out
}

func runs(in []*apiv1.ProbeRun) []probes.ProbeRun {
	var out []probes.ProbeRun
	for _, r := range in {
		out = append(out, probes.ProbeRun{Time: metav1.NewTime(r.GetTime().AsTime()), Result: Result(r.GetResult()),
			Duration: metav1.Duration{Duration: r.GetDuration().AsDuration()}, Output: r.GetOutput(),
			Method: Method(r.GetMethod()), Error: r.GetError()})
	}
	return out
}

func restarts(in []*apiv1.Restart) []probes.Restart {
	var out []probes.Restart
	for _, r := range in {
		out = append(out, probes.Restart{Time: metav1.NewTime(r.GetTime().AsTime()), ContainerID: r.GetContainerId(),
			ProbeType: ProbeType(r.GetProbeType()), GracePeriod: metav1.Duration{Duration: r.GetGracePeriod().AsDuration()},
			Message: r.GetMessage(), Error: r.GetError()})
	}
	return out
}

// Why is the node's form of one container of a PodProbes: what probectl
// prints from.
func Why(pod *probes.PodProbes, c *probes.ContainerProbes) *apiv1.WhyResponse {
	ctr := &apiv1.Container{ContainerId: c.ContainerID, ContainerName: c.Name, PodName: pod.Name,
		PodNamespace: pod.Namespace, PodUid: string(pod.UID), Image: c.Image, State: stateOf(c.State),
		CreatedAt: pbTime(c.CreatedAt), StartedAt: pbTime(c.StartedAt), FinishedAt: pbTime(c.FinishedAt),
		ExitCode: c.ExitCode, Started: c.Started, Ready: c.Ready, SpecError: c.SpecError,
		Restarts: pbRestarts(c.Restarts)}
	for _, p := range c.Probes {
		ctr.Probes = append(ctr.Probes, pbProbe(p))
	}
	w := &apiv1.WhyResponse{Container: ctr}
	for _, x := range c.Explanations {
		w.Explanations = append(w.Explanations, &apiv1.Explanation{Subject: x.Subject, ProbeType: probeTypeOf(x.ProbeType),
			Text: x.Text, Consecutive: x.Consecutive, Threshold: x.Threshold, LastRuns: pbRuns(x.LastRuns), Restarts: pbRestarts(x.Restarts)})
	}
	return w
}

func pbProbe(p probes.Probe) *apiv1.Probe {
	out := &apiv1.Probe{Type: probeTypeOf(p.Type), Result: resultOf(p.Result), Consecutive: p.Consecutive, OnHold: p.OnHold,
		LastProbeTime: pbTime(p.LastProbeTime), LastOutput: p.LastOutput, Method: methodOf(p.Method), Origin: p.Origin,
		History: pbRuns(p.History), KillDeferred: p.KillDeferred, KillDeferredSince: pbTime(p.KillDeferredSince)}
	if s := p.Spec; s != (probes.ProbeSpec{}) {
		out.Spec = &apiv1.ProbeSpec{Handler: s.Handler, InitialDelaySeconds: s.InitialDelaySeconds,
			TimeoutSeconds: s.TimeoutSeconds, PeriodSeconds: s.PeriodSeconds, SuccessThreshold: s.SuccessThreshold,
			FailureThreshold: s.FailureThreshold, TerminationGracePeriodSeconds: s.TerminationGracePeriodSeconds}
	}
	return out
}

func pbRuns(in []probes.ProbeRun) []*apiv1.ProbeRun {
	var out []*apiv1.ProbeRun
	for _, r := range in {
		out = append(out, &apiv1.ProbeRun{Time: timestamppb.New(r.Time.Time), Result: resultOf(r.Result),
			Duration: durationpb.New(r.Duration.Duration), Output: r.Output, Method: methodOf(r.Method), Error: r.Error})
	}
	return out
}

func pbRestarts(in []probes.Restart) []*apiv1.Restart {
	var out []*apiv1.Restart
	for _, r := range in {
		out = append(out, &apiv1.Restart{Time: timestamppb.New(r.Time.Time), ContainerId: r.ContainerID,
			ProbeType: probeTypeOf(r.ProbeType), GracePeriod: durationpb.New(r.GracePeriod.Duration),
			Message: r.Message, Error: r.Error})
	}
	return out
}

func metaTime(ts *timestamppb.Timestamp) *metav1.Time {
	if ts == nil {
		return nil
	}
	t := metav1.NewTime(ts.AsTime())
	return &t
}

func pbTime(t *metav1.Time) *timestamppb.Timestamp {
	if t == nil {
		return nil
	}
	return timestamppb.New(t.Time)
}

// The API's spellings of the proto's enums: Kubernetes' CamelCase words.
var (
	probeTypes = map[apiv1.ProbeType]string{apiv1.ProbeType_PROBE_TYPE_LIVENESS: "Liveness",
		apiv1.ProbeType_PROBE_TYPE_READINESS: "Readiness", apiv1.ProbeType_PROBE_TYPE_STARTUP: "Startup"}
	results = map[apiv1.Result]string{apiv1.Result_RESULT_SUCCESS: "Success", apiv1.Result_RESULT_FAILURE: "Failure",
		apiv1.Result_RESULT_UNKNOWN: "Unknown"}
	methods = map[apiv1.Method]string{apiv1.Method_METHOD_HTTP: "HTTP", apiv1.Method_METHOD_GRPC: "GRPC",
		apiv1.Method_METHOD_EXEC: "Exec", apiv1.Method_METHOD_DIAL: "Dial", apiv1.Method_METHOD_EBPF: "EBPF"}
	states = map[apiv1.ContainerState]string{apiv1.ContainerState_CONTAINER_STATE_CREATED: "Created",
		apiv1.ContainerState_CONTAINER_STATE_RUNNING: "Running", apiv1.ContainerState_CONTAINER_STATE_EXITED: "Exited",
		apiv1.ContainerState_CONTAINER_STATE_UNKNOWN: "Unknown"}
)

// ProbeType, Result, Method and State spell an enum; "" (or Unknown for
// a state and a result) for an unset one.
func ProbeType(t apiv1.ProbeType) string { return probeTypes[t] }

func Result(r apiv1.Result) string {
	if s, ok := results[r]; ok {
		return s
	}
	return "Unknown"
}

func Method(m apiv1.Method) string { return methods[m] }

func State(s apiv1.ContainerState) string {
	if w, ok := states[s]; ok {
		return w
	}
	return "Unknown"
}

func probeTypeOf(s string) apiv1.ProbeType  { return reverse(probeTypes, s) }
func resultOf(s string) apiv1.Result        { return reverse(results, s) }
func methodOf(s string) apiv1.Method        { return reverse(methods, s) }
func stateOf(s string) apiv1.ContainerState { return reverse(states, s) }

// reverse finds the enum spelled s (case-insensitively), else the zero.
func reverse[E comparable](m map[E]string, s string) E {
	for e, w := range m {
		if strings.EqualFold(w, s) {
			return e
		}
	}
	var zero E
	return zero
}
