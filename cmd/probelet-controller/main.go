// Command probelet-controller is probelet's cluster side: while it leads
// (client-go leader election on a Lease), it watches probelet's node
// Leases and marks the readiness-gated pods of a node whose probelet went
// silent not Ready, with the node lifecycle controller's zone rules
// (controller/monitor, controller/zones). Every replica also serves the
// pod admission webhook that moves kubelet probes into probelet's
// annotation (controller/webhook); the leader keeps its certificates.
package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/pflag"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"

	"github.com/probelet/probelet/controller/monitor"
	"github.com/probelet/probelet/controller/slim"
	"github.com/probelet/probelet/controller/webhook/certs"
	"github.com/probelet/probelet/controller/zones"
	"github.com/probelet/probelet/internal/apicount"
	"github.com/probelet/probelet/internal/httpserve"
	"github.com/probelet/probelet/internal/kubeconfig"
	"github.com/probelet/probelet/probespec"
)

// component names the controller in Events and its leader Lease.
const component = "probelet-controller"

func main() {
	if err := run(os.Args[1:]); err != nil && !errors.Is(err, pflag.ErrHelp) {
		fmt.Fprintln(os.Stderr, component+":", err)
		os.Exit(1)
	}
}

// options are the command line.
type options struct {
	kubeconfig, leaseNamespace, metricsAddr string
	grace, renew                            time.Duration
	leaderElect                             bool
	zones                                   zones.Config
	webhook                                 webhookOptions
	probeAPI                                probeAPIOptions
}

func parse(args []string) (options, error) {
	o := options{zones: zones.DefaultConfig()}
	fs := flagSet(&o)
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if err := probespec.CheckLeaseRenewInterval(o.renew); err != nil {
		return o, fmt.Errorf("--lease-renew-interval: %w", err)
	}
	// A healthy Lease is seen changed at least every renewal and a pass.
	if least := o.renew + zones.MonitorPeriod; o.grace <= least {
		return o, fmt.Errorf("--grace-period: %s must be longer than --lease-renew-interval and a monitor pass (%s), or healthy probelets look silent", o.grace, least)
	}
	return o, errors.Join(o.zones.Validate(), o.webhook.validate(), o.probeAPI.validate(o.webhook))
}

// flagSet defines the controller's flags on o.
func flagSet(o *options) *pflag.FlagSet {
	fs := pflag.NewFlagSet(component, pflag.ContinueOnError)
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the API server; empty: the in-cluster configuration")
	fs.StringVar(&o.leaseNamespace, "lease-namespace", probespec.LeaseNamespace, "namespace of probelet's node Leases (and of the leader election Lease)")
	fs.DurationVar(&o.grace, "grace-period", monitor.DefaultGracePeriod, "how long a probelet Lease may go unrenewed, as this controller observes it, before its node's gated pods are marked not Ready")
	fs.DurationVar(&o.renew, "lease-renew-interval", probespec.LeaseRenewInterval, "how often the probelets renew their Leases (their --lease-renew-interval): probelets not renewing for the grace period less one of these and a monitor pass count as silent in their zone's census")
	fs.BoolVar(&o.leaderElect, "leader-elect", true, "elect a leader among the replicas; only the leader marks pods")
	fs.Float32Var(&o.zones.UnhealthyZoneThreshold, "unhealthy-zone-threshold", o.zones.UnhealthyZoneThreshold, "share of a zone's probelets silent (more than 2 of them) that makes a PartialDisruption")
	fs.IntVar(&o.zones.LargeClusterSizeThreshold, "large-cluster-size-threshold", o.zones.LargeClusterSizeThreshold, "zone size above which a PartialDisruption marks at the secondary rate rather than not at all")
	fs.Float32Var(&o.zones.MarkingRate, "marking-rate", o.zones.MarkingRate, "pods marked per second in a Normal zone")
	fs.Float32Var(&o.zones.SecondaryMarkingRate, "secondary-marking-rate", o.zones.SecondaryMarkingRate, "pods marked per second in a large partially disrupted zone")
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", ":9810", "HOST:PORT serving /metrics, /healthz and /readyz; empty turns it off")
	o.webhook.flags(fs)
	o.probeAPI.flags(fs)
	return fs
}

func run(args []string) error {
	o, err := parse(args)
	if err != nil {
		return err
	}
	log, err := zap.NewProduction()
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	cfg, err := kubeconfig.Load(o.kubeconfig)
	if err != nil {
		return err
	}
	cfg.UserAgent = component
	// kubeconfig.Load bounds each call for the agent's narrow client, which
	// puts it on every request but watches; a clientset would put it on
	// the HTTP client and cut every informer's watch at that age.
	cfg.Timeout = 0
	// Every call counted by verb and resource: the controller's own load
	// on the API server, as the API server names it.
	requests, countRequest := apicount.Counter("probelet_controller_api_requests_total",
		"Calls this replica made to the API server, by verb and resource as the API server names them (watch: each watch started).")
	cfg.Wrap(apicount.Wrapper(countRequest))
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	signalled, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ready := &readiness{}
	ctx := ready.drainAfter(signalled, o.webhook.listen != "", log)

	reg := prometheus.NewRegistry()
	zoneState := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "probelet_controller_zone_state",
		Help: "Each zone's state by the zone rules: 1 for the state it is in (Normal, PartialDisruption, FullDisruption)."},
		[]string{"zone", "state"})
	marked := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "probelet_controller_pods_marked_total",
		Help: "Pods this replica marked probelet.io/ready=False, by reason (ProbeletUnavailable, ProbeletNotRunning)."},
		[]string{"reason"})
	for _, c := range []prometheus.Collector{zoneState, marked, requests} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	recorder := broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: component})
	// One cluster-wide list and watch of pods and nodes for the monitor and
	// the webhook's report, keeping only the fields they read.
	shared := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTransform(slim.Transform))
	defer shared.Shutdown()
	m, err := monitor.New(monitor.Options{Client: client, Namespace: o.leaseNamespace, Grace: o.grace, Renew: o.renew, Zones: o.zones,
		Recorder: recorder, Log: log.Named("monitor"), Informers: shared,
		OnState: func(zone string, s zones.State) {
			for _, st := range []zones.State{zones.Normal, zones.PartialDisruption, zones.FullDisruption} {
				v := 0.0
				if st == s {
					v = 1
				}
				zoneState.WithLabelValues(zone, st.String()).Set(v)
			}
		},
		OnMarked: func(reason string) { marked.WithLabelValues(reason).Inc() }})
	if err != nil {
		return err
	}
	leading := m.Run
	// The webhook and the probe-state API serve the Secret's certificate;
	// the leader keeps it (and the caBundles that trust it).
	var loader *certs.Loader
	if o.webhook.listen != "" || o.probeAPI.listen != "" {
		loader = &certs.Loader{Client: client, Namespace: o.leaseNamespace, Secret: o.webhook.secret,
			Period: certs.SyncPeriod(o.webhook.validity), Log: log.Named("certs")}
		go loader.Run(ctx)
		if o.webhook.manageCert {
			authority := &certs.Authority{Client: client, Namespace: o.leaseNamespace, Secret: o.webhook.secret,
				Hosts: o.webhook.hosts, Validity: o.webhook.validity}
			if o.webhook.listen != "" {
				authority.Webhook = o.webhook.config
			}
			if o.probeAPI.listen != "" && o.probeAPI.apiService != "" {
				dyn, err := dynamic.NewForConfig(cfg)
				if err != nil {
					return err
				}
				authority.APIService, authority.APIServices = o.probeAPI.apiService, certs.DynamicAPIServices{Client: dyn}
			}
			leading = both(leading, func(ctx context.Context) error {
				keepCerts(ctx, authority, certs.SyncPeriod(o.webhook.validity), log.Named("certs"))
				return nil
			})
		}
	}
	if o.webhook.listen != "" {
		if err := serveWebhook(ctx, o.webhook, o.leaseNamespace, loader, reg, log.Named("webhook")); err != nil {
			return err
		}
		ready.certificate = loader.Loaded
		hooks, err := webhookLeader(o.leaseNamespace, client, shared, reg, recorder, log.Named("webhook"))
		if err != nil {
			return err
		}
		leading = both(leading, hooks)
	}
	if o.probeAPI.listen != "" {
		if err := serveProbeAPI(ctx, o.probeAPI, o.kubeconfig, o.leaseNamespace, client, shared, loader, log.Named("probe-api")); err != nil {
			return err
		}
	}
	if o.metricsAddr != "" {
		if err := serveMetrics(ctx, o.metricsAddr, reg, ready, log); err != nil {
			return err
		}
	}
	if !o.leaderElect {
		return leading(ctx)
	}
	return lead(ctx, client, o.leaseNamespace, log, leading)
}

// both runs f and g until ctx ends or either fails, and joins them.
func both(f, g func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		errs := make(chan error, 2)
		for _, run := range []func(context.Context) error{f, g} {
			go func() {
				err := run(ctx)
				cancel()
				errs <- err
			}()
		}
		return errors.Join(<-errs, <-errs)
	}
}

// lead runs f while this replica leads. Losing the lead ends the process,
// as kube-controller-manager does: a fresh start is the simplest way to
// drop every judgement and queue of the old term.
func lead(ctx context.Context, client kubernetes.Interface, namespace string, log *zap.Logger, f func(context.Context) error) error {
	host, err := os.Hostname()
	if err != nil {
		return err
	}
	// As kube-controller-manager: the host name alone would let two
	// replicas sharing one (host networking, one test machine) both lead.
	id := host + "_" + string(uuid.NewUUID())
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, namespace, component, nil, client.CoordinationV1(),
		resourcelock.ResourceLockConfig{Identity: id})
	if err != nil {
		return err
	}
	var runErr error
	lost := errors.New("lost the leader election")
	leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
		Lock: lock, ReleaseOnCancel: true,
		// kube-controller-manager's defaults.
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				log.Info("Leading", zap.String("identity", id))
				runErr = f(ctx)
			},
			OnStoppedLeading: func() {
				if ctx.Err() == nil {
					runErr = errors.Join(runErr, lost)
				}
			},
		},
	})
	return runErr
}

func serveMetrics(ctx context.Context, addr string, reg *prometheus.Registry, ready http.Handler, log *zap.Logger) error {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--metrics-bind-address: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.Handle("/readyz", ready)
	srv := httpserve.New(mux)
	go func() {
		if err := srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("The metrics server stopped", zap.Error(err))
		}
	}()
	context.AfterFunc(ctx, func() { _ = srv.Close() })
	// The message (and its address field) is what operators and the e2e
	// read; /readyz is served beside them.
	log.Info("Serving /metrics and /healthz", zap.String("address", lis.Addr().String()))
	return nil
}
