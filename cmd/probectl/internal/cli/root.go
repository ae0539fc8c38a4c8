package cli

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	apiv1 "github.com/probelet/probelet/api/v1alpha1"
)

// rootOptions are the flags and context every command shares.
type rootOptions struct {
	socket  string
	timeout time.Duration
	streams IOStreams
	env     Env
	// cluster, when set, answers instead of a node's socket: kubectl
	// probelet, through the probe-state API.
	cluster Cluster
}

// Cluster is probelet's API as kubectl probelet reads it: the probe-state
// API (probes.probelet.io) answering probelet's own calls for the
// namespace of its flags, and the flags that say where (kubeconfig,
// namespace). Containers are then pod or pod/container.
type Cluster interface {
	AddFlags(fs *pflag.FlagSet)
	Client() (apiv1.ProbeletClient, string, error)
}

// KubectlCommand builds kubectl probelet's command tree: probectl's
// commands that the probe-state API answers, with its words and layout.
func KubectlCommand(streams IOStreams, env Env, cluster Cluster) *cobra.Command {
	o := &rootOptions{streams: streams, env: env, cluster: cluster}
	cmd := &cobra.Command{
		Use:         "probelet",
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl probelet"},
		Short:       "Inspect the probes of your pods through the probe-state API",
		Long: `kubectl probelet reads the probe-state API (probes.probelet.io), which
asks each pod's node's probelet, and answers probe questions without node
access: what each probe last said, how far it is from its threshold, and
why a container is not ready or was restarted. It needs what kubectl get
podprobes needs: view in the namespace.

Containers are addressed as pod or pod/container in the current namespace
(-n); a pod with several containers needs pod/container.

Exit codes: 0 ok, 1 error (e.g. the API unreachable, forbidden, the pod's
node not answering), 2 usage, 3 pod or container not found.`,
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	cmd.SetOut(streams.Out)
	cmd.SetErr(streams.ErrOut)
	cmd.PersistentFlags().DurationVar(&o.timeout, "timeout", 10*time.Second, "how long to wait for the API to answer")
	cluster.AddFlags(cmd.PersistentFlags())
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageErrorf("%v", err) })
	get := newPsCommand(o)
	get.Use, get.Short = "get [POD[/CONTAINER]]", "List the namespace's containers (or a pod's) with their probe results"
	get.Long = `List containers with their started/ready state and the published result of
each probe, for the namespace's pods or one pod. A pod whose node did not
answer is listed with why.`
	get.Example = "  kubectl probelet get\n  kubectl probelet get web -o wide"
	cmd.AddCommand(get, newDescribeCommand(o), newWhyCommand(o), newHistoryCommand(o))
	for _, c := range cmd.Commands() {
		c.Example = strings.ReplaceAll(c.Example, "probectl ", "kubectl probelet ")
		c.Example = strings.ReplaceAll(c.Example, "default/web/app", "web/app")
	}
	return cmd
}

// ExecuteKubectl runs kubectl probelet as Execute runs probectl.
func ExecuteKubectl(ctx context.Context, args []string, streams IOStreams, env Env, cluster Cluster) error {
	return execute(ctx, args, streams, "kubectl probelet", func(streams IOStreams) *cobra.Command {
		return KubectlCommand(streams, env, cluster)
	})
}

// NewCommand builds the probectl command tree writing to streams.
func NewCommand(streams IOStreams, env Env) *cobra.Command {
	o := &rootOptions{streams: streams, env: env}
	cmd := &cobra.Command{
		Use:   "probectl",
		Short: "Inspect probelet's container probes on this node",
		Long: `probectl reads probelet's socket and answers probe questions on the node:
which containers are ready, what each probe last said, and why a container
is not ready or was restarted.

Containers are addressed by an ID prefix or pod name, pod/container or
namespace/pod, or namespace/pod/container; a reference that fits several
containers is refused with the list of candidates.

Exit codes: 0 ok, 1 error (e.g. probelet unreachable), 2 usage (bad flags,
arguments or an ambiguous container), 3 container not found.`,
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	cmd.SetOut(streams.Out)
	cmd.SetErr(streams.ErrOut)
	cmd.PersistentFlags().StringVar(&o.socket, "socket", "",
		fmt.Sprintf("probelet's socket (default $%s, else %s)", SocketEnv, DefaultSocket))
	cmd.PersistentFlags().DurationVar(&o.timeout, "timeout", 10*time.Second, "how long to wait for probelet to answer")
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageErrorf("%v", err) })
	cmd.AddCommand(
		newPsCommand(o), newDescribeCommand(o), newWhyCommand(o), newHistoryCommand(o),
		newWatchCommand(o), newEventsCommand(o), newVersionCommand(o),
	)
	return cmd
}

// Execute runs probectl with args, printing any error to streams.ErrOut.
// ExitCode turns the returned error into the process's exit code.
// Everything it writes goes through a termWriter: no control character
// from a probe's output or a message reaches the terminal.
func Execute(ctx context.Context, args []string, streams IOStreams, env Env) error {
	return execute(ctx, args, streams, "probectl", func(streams IOStreams) *cobra.Command { return NewCommand(streams, env) })
}

// execute runs the command tree build makes, named name in its messages.
func execute(ctx context.Context, args []string, streams IOStreams, name string, build func(IOStreams) *cobra.Command) error {
	out, errOut := newTermWriter(streams.Out), newTermWriter(streams.ErrOut)
	defer func() { _ = errOut.Flush() }()
	defer func() { _ = out.Flush() }()
	streams = IOStreams{Out: out, ErrOut: errOut}
	cmd := build(streams)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	if err != nil {
		fmt.Fprintf(streams.ErrOut, "%s: %v\n", name, err)
		if ExitCode(err) == ExitUsage {
			fmt.Fprintf(streams.ErrOut, "Run '%s --help' for usage.\n", name)
		}
	}
	return err
}

// endpoint is --socket, else $PROBELET_SOCKET, else the default.
func (o *rootOptions) endpoint() string {
	if o.socket != "" {
		return o.socket
	}
	if v, ok := o.env.Lookup(SocketEnv); ok && v != "" {
		return v
	}
	return DefaultSocket
}

func (o *rootOptions) connect() (*client, error) {
	if o.timeout <= 0 {
		return nil, usageErrorf("--timeout must be positive, got %s", o.timeout)
	}
	if o.cluster != nil {
		api, where, err := o.cluster.Client()
		if err != nil {
			return nil, withCode(ExitError, err)
		}
		return &client{api: api, path: where, timeout: o.timeout, cluster: true}, nil
	}
	return dial(o.endpoint(), o.timeout)
}

func (o *rootOptions) now() time.Time { return o.env.Clock.Now() }

// refArg is a command's CONTAINER argument; its Complete takes it when
// given (cobra's Args has checked how many there are).
type refArg struct {
	ref string
}

// Complete takes the container reference, if any.
func (a *refArg) Complete(args []string) error {
	if len(args) > 0 {
		a.ref = args[0]
	}
	return nil
}

// runner is a command's Options: Complete, Validate, Run.
type runner interface {
	Complete(args []string) error
	Validate() error
	Run(ctx context.Context) error
}

// runE wires an Options to cobra; errors that carry no exit code are
// plain failures (1), since cobra's own parse errors never reach here.
func runE(r runner) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if err := r.Complete(args); err != nil {
			return withCode(ExitUsage, err)
		}
		if err := r.Validate(); err != nil {
			return withCode(ExitUsage, err)
		}
		return withCode(ExitError, r.Run(cmd.Context()))
	}
}

// argsRange accepts between min and max arguments named name.
func argsRange(lo, hi int, name string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) < lo {
			return usageErrorf("missing %s", name)
		}
		if len(args) > hi {
			return usageErrorf("too many arguments (want at most %d %s): %q", hi, name, args)
		}
		return nil
	}
}

// completeContainers offers namespace/pod/container references from the
// running probelet for shell completion.
func (o *rootOptions) completeContainers(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	resp, err := call(cmd.Context(), o, apiv1.ProbeletClient.ListContainers, &apiv1.ListContainersRequest{})
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var refs []string
	for _, ctr := range resp.Containers {
		refs = append(refs, ctr.PodNamespace+"/"+ctr.PodName+"/"+ctr.ContainerName)
	}
	return refs, cobra.ShellCompDirectiveNoFileComp
}
