package certs

import (
	"context"
	"crypto/tls"
	"errors"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Loader serves the Secret's certificate to a TLS server (GetCertificate)
// and reads it again every Period, so a renewed certificate is served
// without a restart. Every replica runs one.
type Loader struct {
	Client    kubernetes.Interface
	Namespace string
	Secret    string
	Period    time.Duration
	Log       *zap.Logger

	cur    atomic.Pointer[tls.Certificate]
	failed string // the last load's error, logged once per change
}

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
	l.cur.Store(c)
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
