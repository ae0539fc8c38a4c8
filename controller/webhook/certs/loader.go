package certs

import (
	"context"
	"crypto/tls"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/kubernetes"
)

// Loader serves the Secret's certificate to a TLS server (GetCertificate,
// or as a k8s.io/apiserver certificate provider) and reads it again every
// Period, so a renewed certificate is served without a restart. Every
// replica runs one.
type Loader struct {
	Client    kubernetes.Interface
	Namespace string
	Secret    string
	Period    time.Duration
	Log       *zap.Logger

	cur    atomic.Pointer[tls.Certificate]
	pem    atomic.Pointer[[2][]byte] // cur's certificate and key, PEM
	failed string                    // the last load's error, logged once per change

	mu        sync.Mutex
	listeners []dynamiccertificates.Listener
}

var _ dynamiccertificates.CertKeyContentProvider = (*Loader)(nil)

// firstRetry is how soon a replica without a certificate tries again: the
// leader makes the Secret moments after it starts.
const firstRetry = 500 * time.Millisecond

// Run loads the certificate at once and every Period until ctx ends.
func (l *Loader) Run(ctx context.Context) {
	for {
		l.load(ctx)
		wait := l.Period
		if l.cur.Load() == nil {
			wait = min(wait, firstRetry)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

func (l *Loader) load(ctx context.Context) {
	sec, err := l.Client.CoreV1().Secrets(l.Namespace).Get(ctx, l.Secret, metav1.GetOptions{})
	var c *tls.Certificate
	if err == nil {
		c, err = KeyPair(sec.Data)
	}
	if err != nil {
		if msg := err.Error(); msg != l.failed && ctx.Err() == nil {
			l.log().Warn("Cannot load the webhook's certificate; serving the last one loaded, if any", zap.String("secret", l.Namespace+"/"+l.Secret), zap.Error(err))
			l.failed = msg
		}
		return
	}
	if old := l.cur.Load(); old == nil || string(old.Certificate[0]) != string(c.Certificate[0]) {
		l.log().Info("Serving the webhook's certificate", zap.String("secret", l.Namespace+"/"+l.Secret),
			zap.Time("notAfter", c.Leaf.NotAfter))
	}
	l.failed = ""
	changed := l.cur.Load() == nil || string(l.cur.Load().Certificate[0]) != string(c.Certificate[0])
	l.pem.Store(&[2][]byte{sec.Data[KeyCert], sec.Data[KeyKey]})
	l.cur.Store(c)
	if changed {
		l.mu.Lock()
		for _, li := range l.listeners {
			li.Enqueue()
		}
		l.mu.Unlock()
	}
}

// Name names the provider (k8s.io/apiserver's logs).
func (l *Loader) Name() string { return "secret/" + l.Namespace + "/" + l.Secret }

// CurrentCertKeyContent is the certificate and key last loaded, PEM.
func (l *Loader) CurrentCertKeyContent() ([]byte, []byte) {
	if p := l.pem.Load(); p != nil {
		return p[0], p[1]
	}
	return nil, nil
}

// AddListener is told of each new certificate.
func (l *Loader) AddListener(li dynamiccertificates.Listener) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.listeners = append(l.listeners, li)
}

// Loaded reports whether a certificate is loaded: the webhook can answer.
func (l *Loader) Loaded() bool { return l.cur.Load() != nil }

// GetCertificate is tls.Config's: the certificate last loaded.
func (l *Loader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if c := l.cur.Load(); c != nil {
		return c, nil
	}
	return nil, errors.New("no webhook certificate loaded yet")
}

func (l *Loader) log() *zap.Logger {
	if l.Log == nil {
		return zap.NewNop()
	}
	return l.Log
}
