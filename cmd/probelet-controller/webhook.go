package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"
	"go.uber.org/zap"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"

	"github.com/probelet/probelet/controller/webhook"
	"github.com/probelet/probelet/controller/webhook/certs"
	"github.com/probelet/probelet/internal/httpserve"
)

// webhookOptions are the admission webhook's flags.
type webhookOptions struct {
	listen     string
	secret     string
	config     string
	hosts      []string
	validity   time.Duration
	manageCert bool
}

func (w *webhookOptions) flags(fs *pflag.FlagSet) {
	fs.StringVar(&w.listen, "webhook-listen", ":9443", "HOST:PORT serving the pod admission webhook (every replica serves); empty turns it off")
	fs.StringVar(&w.secret, "webhook-cert-secret", "probelet-webhook-tls", "Secret in --lease-namespace holding the webhook's serving certificate (tls.crt, tls.key) and CA bundle (ca.crt)")
	fs.BoolVar(&w.manageCert, "webhook-manage-cert", true, "make and renew the Secret's CA and certificate and keep the webhook configuration's caBundle (the leader); false: the Secret is provided (cert-manager, your CA) and only read")
	fs.StringVar(&w.config, "webhook-config", "probelet", "MutatingWebhookConfiguration whose caBundle is kept (with --webhook-manage-cert)")
	fs.StringSliceVar(&w.hosts, "webhook-cert-hosts", []string{"probelet-webhook.probelet-system.svc"}, "DNS names and IPs of the serving certificate (the webhook Service's name)")
	fs.DurationVar(&w.validity, "webhook-cert-validity", 90*24*time.Hour, "serving certificate lifetime; renewed with a third of it left, its CA lives ten times as long")
}

func (w webhookOptions) validate() error {
	switch {
	case w.listen == "":
		return nil
	case w.secret == "":
		return errors.New("--webhook-cert-secret: a Secret is needed to serve the webhook")
	case w.manageCert && w.validity < 10*time.Second:
		return fmt.Errorf("--webhook-cert-validity: %s is shorter than 10s", w.validity)
	case w.manageCert && len(w.hosts) == 0:
		return errors.New("--webhook-cert-hosts: the serving certificate needs a host")
	}
	return nil
}

// excluded are the namespaces whose pods are never converted.
func excluded(namespace string) []string { return []string{"kube-system", namespace} }

// webhookShutdown bounds how long the reviews in progress may take to be
// answered once the webhook stops.
const webhookShutdown = 10 * time.Second

// serveWebhook serves the webhook on this replica until ctx ends, with the
// certificate loader holds (the Secret's, reread every certs.SyncPeriod),
// then answers the reviews in progress before it returns from Shutdown.
func serveWebhook(ctx context.Context, w webhookOptions, namespace string, loader *certs.Loader, reg *prometheus.Registry, log *zap.Logger) error {
	admissions, durations := webhook.NewAdmissions(), webhook.NewDurations()
	for _, c := range []prometheus.Collector{admissions, durations} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	lis, err := net.Listen("tcp", w.listen)
	if err != nil {
		return fmt.Errorf("--webhook-listen: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle(webhook.Path, &webhook.Handler{Exclude: excluded(namespace), Log: log, Admissions: admissions, Durations: durations})
	srv := httpserve.New(mux)
	srv.ErrorLog = zap.NewStdLog(log.Named("http"))
	srv.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: loader.GetCertificate}
	go func() {
		if err := srv.ServeTLS(lis, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("The webhook server stopped", zap.Error(err))
		}
	}()
	context.AfterFunc(ctx, func() {
		// The replica has drained (see drain): no new review comes; the
		// ones in progress are answered.
		sctx, cancel := context.WithTimeout(context.Background(), webhookShutdown)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			_ = srv.Close()
		}
	})
	log.Info("Serving the pod admission webhook", zap.String("address", lis.Addr().String()), zap.String("path", webhook.Path))
	return nil
}

// webhookLeader is the webhook's work while leading: reporting the pods
// created while the webhook was away. (The leader also keeps the
// certificates: run.)
func webhookLeader(namespace string, client kubernetes.Interface, shared informers.SharedInformerFactory,
	reg *prometheus.Registry, recorder record.EventRecorder, log *zap.Logger) (func(context.Context) error, error) {
	missed := prometheus.NewCounter(prometheus.CounterOpts{Name: "probelet_webhook_missed_pods_total",
		Help: "Pods of managed namespaces admitted with kubelet probes the webhook would have moved: created while it was unavailable."})
	notAsked := prometheus.NewCounter(prometheus.CounterOpts{Name: "probelet_webhook_not_asked_pods_total",
		Help: "Pods of managed namespaces admitted with kubelet probes, created before the managed label (the namespace's or their own) was last written: perhaps never sent to the webhook."})
	for _, c := range []prometheus.Collector{missed, notAsked} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	reporter := &webhook.Reporter{Client: client, Recorder: recorder, Exclude: excluded(namespace), OnMissed: missed.Inc,
		OnNotAsked: notAsked.Inc, Log: log, Informers: shared}
	return reporter.Run, nil
}

// keepCerts syncs the certificates every period until ctx ends.
func keepCerts(ctx context.Context, a *certs.Authority, period time.Duration, log *zap.Logger) {
	t := time.NewTicker(period)
	defer t.Stop()
	failed := ""
	for {
		did, err := a.Sync(ctx)
		switch {
		case err != nil && ctx.Err() == nil && err.Error() != failed:
			log.Warn("Cannot keep the serving certificates; retrying", zap.Error(err))
			failed = err.Error()
		case err == nil && did != "":
			log.Info("Serving certificates", zap.String("did", did))
			failed = ""
		case err == nil:
			failed = ""
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
