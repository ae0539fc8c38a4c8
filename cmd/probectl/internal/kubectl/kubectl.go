// Package kubectl is probelet's API as kubectl probelet reads it: the
// probe-state API (probes.probelet.io/v1alpha1 podprobes) behind the calls
// probectl makes of a node's socket, so that both print with the same
// words and layout. Containers are "pod" or "pod/container" in the
// namespace of the kubeconfig or -n; the pod's Events come from the core
// API, as kubectl describe reads them.
package kubectl

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/pflag"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"

	"github.com/probelet/probelet/api/probes/convert"
	probes "github.com/probelet/probelet/api/probes/v1alpha1"
	apiv1 "github.com/probelet/probelet/api/v1alpha1"
)

// Cluster is cli.Cluster over a kubeconfig: kubectl's own flags.
type Cluster struct {
	flags *genericclioptions.ConfigFlags
}

// New returns a Cluster with kubectl's connection flags.
func New() *Cluster { return &Cluster{flags: genericclioptions.NewConfigFlags(true)} }

// AddFlags adds --kubeconfig, -n, --context and kubectl's other
// connection flags.
func (c *Cluster) AddFlags(fs *pflag.FlagSet) { c.flags.AddFlags(fs) }

// Client reads the probe-state API of the kubeconfig's cluster for its
// namespace.
func (c *Cluster) Client() (apiv1.ProbeletClient, string, error) {
	cfg, err := c.flags.ToRESTConfig()
	if err != nil {
		return nil, "", err
	}
	ns, _, err := c.flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, "", err
	}
	api, err := NewClient(cfg, ns)
	if err != nil {
		return nil, "", err
	}
	return api, "the probe-state API at " + cfg.Host, nil
}

// scheme decodes the API's types.
var codecs = func() serializer.CodecFactory {
	s := runtime.NewScheme()
	if err := probes.AddToScheme(s); err != nil {
		panic(err) // registering fixed types cannot fail
	}
	return serializer.NewCodecFactory(s)
}()

// client answers probelet's calls from the probe-state API.
type client struct {
	apiv1.UnimplementedProbeletServer // the calls it does not answer
	probes                            rest.Interface
	core                              corev1client.CoreV1Interface
	ns                                string
}

var _ apiv1.ProbeletClient = (*client)(nil)

// NewClient reads namespace ns of cfg's cluster.
func NewClient(cfg *rest.Config, ns string) (apiv1.ProbeletClient, error) {
	pc := rest.CopyConfig(cfg)
	pc.GroupVersion, pc.APIPath, pc.NegotiatedSerializer = &probes.SchemeGroupVersion, "/apis", codecs.WithoutConversion()
	rc, err := rest.RESTClientFor(pc)
	if err != nil {
		return nil, err
	}
	core, err := corev1client.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &client{probes: rc, core: core, ns: ns}, nil
}

func (c *client) Version(ctx context.Context, _ *apiv1.VersionRequest, _ ...grpc.CallOption) (*apiv1.VersionResponse, error) {
	if err := c.probes.Get().AbsPath("/apis", probes.GroupName, "v1alpha1").Do(ctx).Error(); err != nil {
		return nil, apiError(err, "")
	}
	return &apiv1.VersionResponse{Version: probes.SchemeGroupVersion.String(), ApiVersion: "v1alpha1"}, nil
}

func (c *client) ListContainers(ctx context.Context, req *apiv1.ListContainersRequest, _ ...grpc.CallOption) (*apiv1.ListContainersResponse, error) {
	var pods []probes.PodProbes
	pod, name, err := splitRef(req.GetContainer())
	if err != nil {
		return nil, err
	}
	if pod == "" {
		list := &probes.PodProbesList{}
		if err := c.probes.Get().Namespace(c.ns).Resource(probes.Resource.Resource).Do(ctx).Into(list); err != nil {
			return nil, apiError(err, "")
		}
		pods = list.Items
	} else {
		p, err := c.pod(ctx, pod)
		if err != nil {
			return nil, err
		}
		pods = []probes.PodProbes{*p}
	}
	resp := &apiv1.ListContainersResponse{}
	for i := range pods {
		p := &pods[i]
		if !p.Source.Answered {
			// The row says why.
			resp.Containers = append(resp.Containers, &apiv1.Container{PodName: p.Name, PodNamespace: p.Namespace,
				PodUid: string(p.UID), ContainerName: "-", State: apiv1.ContainerState_CONTAINER_STATE_UNKNOWN, Unavailable: unanswered(p)})
			continue
		}
		for j := range p.Containers {
			if name == "" || p.Containers[j].Name == name {
				resp.Containers = append(resp.Containers, convert.Why(p, &p.Containers[j]).Container)
			}
		}
	}
	return resp, nil
}

func (c *client) GetContainer(ctx context.Context, req *apiv1.GetContainerRequest, _ ...grpc.CallOption) (*apiv1.GetContainerResponse, error) {
	p, ctr, err := c.container(ctx, req.GetContainer())
	if err != nil {
		return nil, err
	}
	w := convert.Why(p, ctr)
	if n := int(req.GetHistoryLimit()); n > 0 {
		for _, pr := range w.Container.Probes {
			if len(pr.History) > n {
				pr.History = pr.History[len(pr.History)-n:]
			}
		}
	}
	events, err := c.events(ctx, p, ctr.Name)
	if err != nil {
		return nil, err
	}
	return &apiv1.GetContainerResponse{Container: w.Container, Events: events}, nil
}

func (c *client) Why(ctx context.Context, req *apiv1.WhyRequest, _ ...grpc.CallOption) (*apiv1.WhyResponse, error) {
	p, ctr, err := c.container(ctx, req.GetContainer())
	if err != nil {
		return nil, err
	}
	return convert.Why(p, ctr), nil
}

// The streams are a node's: the probe-state API has no watch.
func (c *client) WatchResults(context.Context, *apiv1.WatchResultsRequest, ...grpc.CallOption) (grpc.ServerStreamingClient[apiv1.ResultChange], error) {
	return nil, status.Error(codes.Unimplemented, "the probe-state API has no watch")
}

func (c *client) Events(context.Context, *apiv1.EventsRequest, ...grpc.CallOption) (grpc.ServerStreamingClient[apiv1.Event], error) {
	return nil, status.Error(codes.Unimplemented, "the probe-state API has no event stream: kubectl events does")
}

func (c *client) ListExplained(context.Context, *apiv1.ListExplainedRequest, ...grpc.CallOption) (*apiv1.ListExplainedResponse, error) {
	return nil, status.Error(codes.Unimplemented, "a node's call")
}

// pod reads one pod's PodProbes.
func (c *client) pod(ctx context.Context, name string) (*probes.PodProbes, error) {
	p := &probes.PodProbes{}
	if err := c.probes.Get().Namespace(c.ns).Resource(probes.Resource.Resource).Name(name).Do(ctx).Into(p); err != nil {
		return nil, apiError(err, fmt.Sprintf("no pod %q in namespace %q", name, c.ns))
	}
	return p, nil
}

// container resolves "pod" (a pod of one container) or "pod/container".
func (c *client) container(ctx context.Context, ref string) (*probes.PodProbes, *probes.ContainerProbes, error) {
	pod, name, err := splitRef(ref)
	if err != nil {
		return nil, nil, err
	}
	if pod == "" {
		return nil, nil, status.Error(codes.InvalidArgument, "name a pod, or pod/container")
	}
	p, err := c.pod(ctx, pod)
	if err != nil {
		return nil, nil, err
	}
	if !p.Source.Answered {
		return nil, nil, status.Error(codes.Unavailable, unanswered(p))
	}
	var names []string
	for i := range p.Containers {
		if p.Containers[i].Name == name || (name == "" && len(p.Containers) == 1) {
			return p, &p.Containers[i], nil
		}
		names = append(names, p.Containers[i].Name)
	}
	switch {
	case len(names) == 0:
		return nil, nil, status.Errorf(codes.NotFound, "probelet on node %s knows no container of pod %s/%s", p.NodeName, p.Namespace, p.Name)
	case name == "":
		return nil, nil, status.Errorf(codes.InvalidArgument, "pod %s has containers %s: name one (%s/CONTAINER)", p.Name, strings.Join(names, ", "), p.Name)
	}
	return nil, nil, status.Errorf(codes.NotFound, "pod %s has no container %q (it has %s)", p.Name, name, strings.Join(names, ", "))
}

// events are the probe Events of the pod's container, oldest first, as
// kubectl describe pod shows them.
func (c *client) events(ctx context.Context, p *probes.PodProbes, container string) ([]*apiv1.Event, error) {
	list, err := c.core.Events(p.Namespace).List(ctx, metav1.ListOptions{FieldSelector: fields.Set{
		"involvedObject.kind": "Pod", "involvedObject.name": p.Name, "involvedObject.uid": string(p.UID)}.String()})
	if err != nil {
		if apierrors.IsForbidden(err) {
			return nil, nil // the probes without the Events: view grants both, a narrower role may not
		}
		return nil, apiError(err, "")
	}
	var out []*apiv1.Event
	for _, e := range list.Items {
		if !strings.HasSuffix(e.InvolvedObject.FieldPath, "{"+container+"}") {
			continue
		}
		ev := &apiv1.Event{Time: timestamppb.New(eventTime(e).Time), Type: e.Type, Reason: e.Reason, Message: e.Message,
			PodUid: string(p.UID), PodName: p.Name, PodNamespace: p.Namespace, ContainerName: container, ProbeType: probeTypeOf(e.Message)}
		if ev.ProbeType == apiv1.ProbeType_PROBE_TYPE_UNSPECIFIED {
			continue // not about a probe (Pulled, Created, Started, BackOff)
		}
		out = append(out, ev)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.AsTime().Before(out[j].Time.AsTime()) })
	return out, nil
}

func eventTime(e corev1.Event) (t metav1.Time) {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp
	case !e.EventTime.IsZero():
		return metav1.Time(e.EventTime)
	}
	return e.FirstTimestamp
}

// probeTypeOf reads the kubelet's Event words: "Liveness probe failed: ...",
// "Container app failed liveness probe, will be restarted".
func probeTypeOf(msg string) apiv1.ProbeType {
	m := strings.ToLower(msg)
	for _, t := range []struct {
		word string
		t    apiv1.ProbeType
	}{{"liveness probe", apiv1.ProbeType_PROBE_TYPE_LIVENESS}, {"readiness probe", apiv1.ProbeType_PROBE_TYPE_READINESS},
		{"startup probe", apiv1.ProbeType_PROBE_TYPE_STARTUP}} {
		if strings.Contains(m, t.word) {
			return t.t
		}
	}
	return apiv1.ProbeType_PROBE_TYPE_UNSPECIFIED
}

// unanswered says why a pod's node did not answer.
func unanswered(p *probes.PodProbes) string {
	return fmt.Sprintf("pod %s/%s: %s: %s", p.Namespace, p.Name, p.Source.Reason, p.Source.Message)
}

// splitRef reads "pod" or "pod/container".
func splitRef(ref string) (pod, container string, err error) {
	parts := strings.Split(ref, "/")
	switch {
	case ref == "":
		return "", "", nil
	case len(parts) > 2 || slices.Contains(parts, ""):
		return "", "", status.Errorf(codes.InvalidArgument, "%q is not POD or POD/CONTAINER (the namespace is -n's)", ref)
	case len(parts) == 2:
		return parts[0], parts[1], nil
	}
	return parts[0], "", nil
}

// apiError turns an API error into the gRPC status probectl explains.
func apiError(err error, notFound string) error {
	switch {
	case apierrors.IsNotFound(err) && notFound != "":
		return status.Error(codes.NotFound, notFound)
	case apierrors.IsNotFound(err):
		return status.Error(codes.NotFound, err.Error()+" (is the probe-state API installed? kubectl get apiservice v1alpha1.probes.probelet.io)")
	case apierrors.IsForbidden(err), apierrors.IsUnauthorized(err):
		return status.Error(codes.PermissionDenied, err.Error())
	case apierrors.IsServiceUnavailable(err):
		return status.Error(codes.Unavailable, err.Error()+" (kubectl get apiservice v1alpha1.probes.probelet.io says why)")
	}
	return status.Error(codes.Unavailable, err.Error())
}
