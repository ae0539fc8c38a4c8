// Package certs keeps the webhook's TLS without another component: a CA
// and a serving certificate it signed, in a Secret all replicas read, and
// the MutatingWebhookConfiguration's caBundle in step with it.
//
// Rotation never fails an admission: a serving certificate is renewed
// under the same CA, once it has a third of its life left; a CA is renewed
// the same way, but the new one only joins the bundle first (the old one
// stays until it expires) and signs certificates only once the webhook
// configuration trusts it.
package certs

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
)

// The Secret's keys: cert-manager's and kubernetes.io/tls's names, and the
// CA's key, which only a Secret this package made has.
const (
	KeyCABundle = "ca.crt"
	KeyCAKey    = "ca.key"
	KeyCert     = corev1.TLSCertKey
	KeyKey      = corev1.TLSPrivateKeyKey
)

// caLifetimes is a CA's validity in serving certificate validities.
const caLifetimes = 10

// Authority renews the Secret's CA and serving certificate and keeps the
// webhook configuration's caBundle equal to the Secret's CA bundle. One
// replica runs it (the leader).
type Authority struct {
	Client    kubernetes.Interface
	Namespace string
	Secret    string
	// Webhook is the MutatingWebhookConfiguration whose webhooks'
	// caBundle is kept.
	Webhook string
	// APIService, when set, is the APIService (the probe-state API's,
	// served with the same certificate) whose caBundle is kept too,
	// through APIServices.
	APIService  string
	APIServices CABundles
	// Hosts are the serving certificate's DNS names and IPs.
	Hosts []string
	// Validity is the serving certificate's; a CA lives caLifetimes times
	// longer.
	Validity time.Duration
	Clock    clock.PassiveClock // default real
}

// Sync brings the Secret and the webhook configuration one step closer to
// valid, fresh certificates and returns what it did ("" when nothing was
// due). Call it periodically (SyncPeriod).
func (a *Authority) Sync(ctx context.Context) (string, error) {
	now := a.now()
	sec, err := a.Client.CoreV1().Secrets(a.Namespace).Get(ctx, a.Secret, metav1.GetOptions{})
	exists := err == nil
	if apierrors.IsNotFound(err) {
		sec = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: a.Secret, Namespace: a.Namespace}, Type: corev1.SecretTypeTLS}
	} else if err != nil {
		return "", err
	}
	st := read(sec.Data, now)
	var did string
	switch {
	case st.ca == nil || a.stale(st.ca.cert, now, a.Validity*caLifetimes):
		// A new CA joins the bundle; it signs nothing before the webhook
		// configuration trusts it (next Sync). The first one signs at once:
		// nothing is served yet.
		ca, err := newCA(now, a.Validity*caLifetimes)
		if err != nil {
			return "", err
		}
		first := len(st.bundle) == 0
		st.bundle = append([]*x509.Certificate{ca.cert}, st.bundle...)
		st.ca = ca
		did = "a new CA joined the bundle"
		if first || st.leaf == nil {
			// Nothing is served that the new CA could break.
			if st.leaf, err = a.newLeaf(ca, now); err != nil {
				return "", err
			}
			did = "made a CA and a serving certificate"
		}
	case st.leaf == nil || a.stale(st.leaf.cert, now, a.Validity) || !signedBy(st.leaf.cert, st.ca.cert):
		trusted, err := a.trusts(ctx, st.ca.cert)
		if err != nil {
			return "", err
		}
		if !trusted {
			break // the bundle first (below)
		}
		if st.leaf, err = a.newLeaf(st.ca, now); err != nil {
			return "", err
		}
		did = "renewed the serving certificate"
	}
	if did != "" {
		sec.Type = corev1.SecretTypeTLS
		sec.Data = st.encode()
		if !exists {
			_, err = a.Client.CoreV1().Secrets(a.Namespace).Create(ctx, sec, metav1.CreateOptions{})
		} else {
			_, err = a.Client.CoreV1().Secrets(a.Namespace).Update(ctx, sec, metav1.UpdateOptions{})
		}
		if err != nil {
			return "", err
		}
	}
	if a.Webhook != "" {
		updated, err := a.syncBundle(ctx, encodeCerts(st.bundle))
		if err != nil {
			return did, err
		}
		if updated && did == "" {
			did = "updated the webhook configuration's caBundle"
		}
	}
	if a.APIService != "" {
		bundle := encodeCerts(st.bundle)
		cur, err := a.APIServices.CABundle(ctx, a.APIService)
		if err != nil {
			return did, err
		}
		if !bytes.Equal(cur, bundle) {
			if err := a.APIServices.SetCABundle(ctx, a.APIService, bundle); err != nil {
				return did, err
			}
			if did == "" {
				did = "updated the APIService's caBundle"
			}
		}
	}
	return did, nil
}

// SyncPeriod is how often Sync should run for a serving certificate valid
// for validity: a tenth of it, between 1 s and 1 min.
func SyncPeriod(validity time.Duration) time.Duration {
	return min(max(validity/10, time.Second), time.Minute)
}

func (a *Authority) now() time.Time {
	if a.Clock == nil {
		return time.Now()
	}
	return a.Clock.Now()
}

// stale reports whether a certificate valid for validity has a third of
// it or less left.
func (a *Authority) stale(c *x509.Certificate, now time.Time, validity time.Duration) bool {
	return c.NotAfter.Sub(now) <= validity/3
}

// trusts reports whether every webhook of the configuration, and the
// APIService, trust ca.
func (a *Authority) trusts(ctx context.Context, ca *x509.Certificate) (bool, error) {
	if a.APIService != "" {
		cur, err := a.APIServices.CABundle(ctx, a.APIService)
		if err != nil || !bytes.Contains(cur, encodeCerts([]*x509.Certificate{ca})) {
			return false, err
		}
	}
	if a.Webhook == "" {
		return true, nil
	}
	cfg, err := a.Client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, a.Webhook, metav1.GetOptions{})
	if err != nil {
		return false, err
	}
	for _, w := range cfg.Webhooks {
		if !bytes.Contains(w.ClientConfig.CABundle, encodeCerts([]*x509.Certificate{ca})) {
			return false, nil
		}
	}
	return len(cfg.Webhooks) > 0, nil
}

// syncBundle sets every webhook's caBundle to bundle.
func (a *Authority) syncBundle(ctx context.Context, bundle []byte) (bool, error) {
	cfgs := a.Client.AdmissionregistrationV1().MutatingWebhookConfigurations()
	cfg, err := cfgs.Get(ctx, a.Webhook, metav1.GetOptions{})
	if err != nil {
		return false, err
	}
	changed := false
	for i := range cfg.Webhooks {
		if !bytes.Equal(cfg.Webhooks[i].ClientConfig.CABundle, bundle) {
			cfg.Webhooks[i].ClientConfig.CABundle, changed = bundle, true
		}
	}
	if !changed {
		return false, nil
	}
	_, err = cfgs.Update(ctx, cfg, metav1.UpdateOptions{})
	return err == nil, err
}

// pair is a certificate and its key.
type pair struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// state is the Secret's content, decoded: what cannot be read is absent
// (and made again), expired CAs are dropped from the bundle.
type state struct {
	bundle   []*x509.Certificate
	ca, leaf *pair
}

func read(data map[string][]byte, now time.Time) state {
	var st state
	for _, c := range decodeCerts(data[KeyCABundle]) {
		if now.Before(c.NotAfter) {
			st.bundle = append(st.bundle, c)
		}
	}
	if key := decodeKey(data[KeyCAKey]); len(st.bundle) > 0 && holds(st.bundle[0], key) {
		st.ca = &pair{st.bundle[0], key}
	}
	if certs, key := decodeCerts(data[KeyCert]), decodeKey(data[KeyKey]); len(certs) > 0 && holds(certs[0], key) && now.Before(certs[0].NotAfter) {
		st.leaf = &pair{certs[0], key}
	}
	return st
}

// holds reports whether key is c's private key. A Secret edited by hand may
// pair an RSA or Ed25519 certificate with any key, or a certificate with
// another certificate's key: neither is used (and both are made again).
func holds(c *x509.Certificate, key *ecdsa.PrivateKey) bool {
	pub, ok := c.PublicKey.(*ecdsa.PublicKey)
	return ok && key != nil && pub.Equal(&key.PublicKey)
}

func (st state) encode() map[string][]byte {
	keyPEM := func(k *ecdsa.PrivateKey) []byte {
		der, _ := x509.MarshalECPrivateKey(k)
		return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
	}
	return map[string][]byte{
		KeyCABundle: encodeCerts(st.bundle),
		KeyCAKey:    keyPEM(st.ca.key),
		KeyCert:     encodeCerts([]*x509.Certificate{st.leaf.cert}),
		KeyKey:      keyPEM(st.leaf.key),
	}
}

func encodeCerts(certs []*x509.Certificate) []byte {
	var b bytes.Buffer
	for _, c := range certs {
		_ = pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
	}
	return b.Bytes()
}

func decodeCerts(data []byte) []*x509.Certificate {
	var out []*x509.Certificate
	for {
		var b *pem.Block
		if b, data = pem.Decode(data); b == nil {
			return out
		}
		if c, err := x509.ParseCertificate(b.Bytes); err == nil && b.Type == "CERTIFICATE" {
			out = append(out, c)
		}
	}
}

func decodeKey(data []byte) *ecdsa.PrivateKey {
	b, _ := pem.Decode(data)
	if b == nil {
		return nil
	}
	if k, err := x509.ParseECPrivateKey(b.Bytes); err == nil {
		return k
	}
	if k, err := x509.ParsePKCS8PrivateKey(b.Bytes); err == nil {
		if ek, ok := k.(*ecdsa.PrivateKey); ok {
			return ek
		}
	}
	return nil
}

func signedBy(c, ca *x509.Certificate) bool { return c.CheckSignatureFrom(ca) == nil }

// issue makes a key and a certificate of tmpl for it, signed by parent
// (nil: self-signed).
func issue(tmpl *x509.Certificate, parent *pair) (*pair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	if tmpl.SerialNumber, err = rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127)); err != nil {
		return nil, err
	}
	signer, signerKey := tmpl, key
	if parent != nil {
		signer, signerKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return &pair{cert, key}, err
}

func newCA(now time.Time, validity time.Duration) (*pair, error) {
	return issue(&x509.Certificate{Subject: pkix.Name{CommonName: fmt.Sprintf("probelet-webhook-ca@%d", now.Unix())},
		NotBefore: now.Add(-time.Minute), NotAfter: now.Add(validity), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}, nil)
}

// newLeaf is a serving certificate for the hosts, signed by ca, valid for
// the validity or until ca expires, whichever comes first.
func (a *Authority) newLeaf(ca *pair, now time.Time) (*pair, error) {
	if len(a.Hosts) == 0 {
		return nil, errors.New("certs: the serving certificate needs a host")
	}
	notAfter := now.Add(a.Validity)
	if ca.cert.NotAfter.Before(notAfter) {
		notAfter = ca.cert.NotAfter
	}
	tmpl := &x509.Certificate{Subject: pkix.Name{CommonName: a.Hosts[0]},
		NotBefore: now.Add(-time.Minute), NotAfter: notAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	for _, h := range a.Hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	return issue(tmpl, ca)
}

// KeyPair reads the serving certificate and key from the Secret's data.
func KeyPair(data map[string][]byte) (*tls.Certificate, error) {
	c, err := tls.X509KeyPair(data[KeyCert], data[KeyKey])
	if err != nil {
		return nil, fmt.Errorf("the Secret's %s and %s: %w", KeyCert, KeyKey, err)
	}
	return &c, nil
}
