package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/spf13/pflag"
	"go.uber.org/zap"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/probelet/probelet/controller/probestate"
	"github.com/probelet/probelet/controller/webhook/certs"
)

// probeAPIOptions are the probe-state API's flags.
type probeAPIOptions struct {
	listen      string
	tokenFile   string
	nodeTimeout time.Duration
	apiService  string
}

func (p *probeAPIOptions) flags(fs *pflag.FlagSet) {
	fs.StringVar(&p.listen, "probe-api-listen", "", "HOST:PORT serving the probe-state API (probes.probelet.io/v1alpha1 podprobes) to the API server's aggregator, with the webhook's certificate (every replica serves); empty turns it off")
	fs.StringVar(&p.tokenFile, "probe-api-token-file", "/var/run/secrets/probelet.io/state/token", "a token for the audience probelet.io/state (a projected ServiceAccount token), presented to each node's probelet")
	fs.DurationVar(&p.nodeTimeout, "probe-api-node-timeout", probestate.DefaultNodeTimeout, "how long a node's probelet may take to answer before its pods answer Timeout")
	fs.StringVar(&p.apiService, "probe-api-service", "v1alpha1.probes.probelet.io", "APIService whose caBundle is kept with the webhook's (with --webhook-manage-cert)")
}

func (p probeAPIOptions) validate(w webhookOptions) error {
	switch {
	case p.listen == "":
		return nil
	case p.nodeTimeout <= 0:
		return fmt.Errorf("--probe-api-node-timeout: %s must be positive", p.nodeTimeout)
	case p.tokenFile == "":
		return errors.New("--probe-api-token-file: the nodes need a token")
	case w.secret == "":
		return errors.New("--probe-api-listen: it serves with --webhook-cert-secret's certificate, and none is set")
	}
	if _, _, err := net.SplitHostPort(p.listen); err != nil {
		return fmt.Errorf("--probe-api-listen: %w", err)
	}
	return nil
}

// serveProbeAPI serves the probe-state API on this replica until ctx ends,
// over the shared pod and node informers and probelet's Leases.
func serveProbeAPI(ctx context.Context, p probeAPIOptions, kubeconfig, leaseNamespace string, client kubernetes.Interface,
	shared informers.SharedInformerFactory, cert *certs.Loader, log *zap.Logger) error {
	inNS := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(leaseNamespace))
	leases := inNS.Coordination().V1().Leases()
	pods, nodes := shared.Core().V1().Pods(), shared.Core().V1().Nodes()
	// Registered before either factory starts.
	podInformer, nodeInformer, leaseInformer := pods.Informer(), nodes.Informer(), leases.Informer()
	fetcher, err := probestate.NewFetcher(probestate.FetchOptions{Leases: leases.Lister().Leases(leaseNamespace),
		Nodes: nodes.Lister(), TokenFile: p.tokenFile, NodeTimeout: p.nodeTimeout})
	if err != nil {
		return err
	}
	srv, err := probestate.NewServer(probestate.ServerOptions{Listen: p.listen, Cert: cert, Kubeconfig: kubeconfig,
		Storage: probestate.NewStorage(pods.Lister(), fetcher)})
	if err != nil {
		return fmt.Errorf("--probe-api-listen: %w", err)
	}
	inNS.Start(ctx.Done())
	shared.Start(ctx.Done())
	go func() {
		defer fetcher.Close()
		defer inNS.Shutdown()
		if !cache.WaitForCacheSync(ctx.Done(), podInformer.HasSynced, nodeInformer.HasSynced, leaseInformer.HasSynced) {
			return
		}
		log.Info("Serving the probe-state API", zap.String("address", p.listen))
		if err := srv.PrepareRun().RunWithContext(ctx); err != nil {
			log.Error("The probe-state API stopped", zap.Error(err))
		}
	}()
	return nil
}
