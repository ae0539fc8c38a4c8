package certs_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/probelet/probelet/controller/webhook/certs"
)

const (
	ns       = "probelet-system"
	secret   = "probelet-webhook-tls"
	config   = "probelet"
	validity = time.Hour
	host     = "probelet-webhook.probelet-system.svc"
)

type env struct {
	t   *testing.T
	cs  *fake.Clientset
	clk *clocktesting.FakeClock
	a   *certs.Authority
}

func newEnv(t *testing.T) *env {
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: config},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "namespaces.probelet.io"}, {Name: "pods.probelet.io"}}}
	e := &env{t: t, cs: fake.NewClientset(cfg), clk: clocktesting.NewFakeClock(time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC))}
	e.a = &certs.Authority{Client: e.cs, Namespace: ns, Secret: secret, Webhook: config,
		Hosts: []string{host, "127.0.0.1"}, Validity: validity, Clock: e.clk}
	return e
}

func (e *env) sync() string {
	e.t.Helper()
	did, err := e.a.Sync(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	e.servedIsTrusted()
	return did
}

// served is the Secret's serving certificate; bundles the webhooks'
// caBundles.
func (e *env) served() (*x509.Certificate, [][]byte) {
	e.t.Helper()
	sec, err := e.cs.CoreV1().Secrets(ns).Get(context.Background(), secret, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	kp, err := certs.KeyPair(sec.Data)
	if err != nil {
		e.t.Fatal(err)
	}
	cfg, err := e.cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(context.Background(), config, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	var bundles [][]byte
	for _, w := range cfg.Webhooks {
		bundles = append(bundles, w.ClientConfig.CABundle)
	}
	return kp.Leaf, bundles
}

// servedIsTrusted is the invariant behind "no failed admission": after
// every step, the certificate a replica serves verifies against every
// webhook's caBundle, for every host, now.
func (e *env) servedIsTrusted() {
	e.t.Helper()
	leaf, bundles := e.served()
	for _, b := range bundles {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			e.t.Fatalf("caBundle %q holds no certificate", b)
		}
		for _, h := range []string{host, "127.0.0.1"} {
			if _, err := leaf.Verify(x509.VerifyOptions{DNSName: h, Roots: pool, CurrentTime: e.clk.Now()}); err != nil {
				e.t.Fatalf("the served certificate does not verify for %s against the caBundle: %v", h, err)
			}
		}
	}
}

func count(bundle []byte) int {
	n := 0
	for {
		var b *pem.Block
		if b, bundle = pem.Decode(bundle); b == nil {
			return n
		}
		n++
	}
}

func TestFirstSyncMakesACAAndAServingCertificate(t *testing.T) {
	e := newEnv(t)
	if did := e.sync(); did != "made a CA and a serving certificate" {
		t.Fatalf("first sync: %q", did)
	}
	if did := e.sync(); did != "" {
		t.Fatalf("second sync: %q, want nothing to do", did)
	}
	leaf, bundles := e.served()
	if got := leaf.NotAfter.Sub(e.clk.Now()); got != validity {
		t.Fatalf("serving certificate valid for %v, want %v", got, validity)
	}
	if len(bundles) != 2 || count(bundles[0]) != 1 {
		t.Fatalf("bundles %d with %d CAs, want one CA in each webhook", len(bundles), count(bundles[0]))
	}
}

// TestRotationNeverServesAnUntrustedCertificate steps through many
// serving certificate and CA lifetimes; servedIsTrusted holds after every
// sync, renewals come once a third of a lifetime is left, and expired CAs
// leave the bundle.
func TestRotationNeverServesAnUntrustedCertificate(t *testing.T) {
	e := newEnv(t)
	e.sync()
	first, _ := e.served()
	renewals, caJoins := 0, 0
	step := certs.SyncPeriod(validity)
	for e.clk.Since(first.NotBefore) < 25*validity {
		e.clk.Step(step)
		switch did := e.sync(); did {
		case "renewed the serving certificate":
			renewals++
			if leaf, _ := e.served(); leaf.NotAfter.Sub(e.clk.Now()) <= validity/3 {
				t.Fatalf("a renewed certificate is stale already: valid until %v", leaf.NotAfter)
			}
		case "a new CA joined the bundle":
			caJoins++
			if did := e.sync(); did != "renewed the serving certificate" {
				t.Fatalf("the sync after a new CA joined: %q, want the serving certificate signed by it", did)
			}
		case "", "updated the webhook configuration's caBundle":
		default:
			t.Fatalf("sync did %q", did)
		}
		_, bundles := e.served()
		if n := count(bundles[0]); n > 2 {
			t.Fatalf("%d CAs in the bundle: expired ones must leave", n)
		}
	}
	// 25 lifetimes: a renewal each 2/3 of one; a CA each 2/3 of ten.
	if renewals < 30 || caJoins < 3 {
		t.Fatalf("%d renewals and %d new CAs in 25 lifetimes", renewals, caJoins)
	}
}

// TestAnUnreadableSecretIsMadeAgain: a Secret whose content cannot be read
// (edited by hand) gets a new CA and certificate.
func TestAnUnreadableSecretIsMadeAgain(t *testing.T) {
	e := newEnv(t)
	e.sync()
	sec, _ := e.cs.CoreV1().Secrets(ns).Get(context.Background(), secret, metav1.GetOptions{})
	sec.Data[certs.KeyCABundle] = []byte("garbage")
	if _, err := e.cs.CoreV1().Secrets(ns).Update(context.Background(), sec, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if did := e.sync(); did != "made a CA and a serving certificate" {
		t.Fatalf("sync of an unreadable Secret: %q", did)
	}
}

func TestSyncPeriod(t *testing.T) {
	for _, tc := range []struct{ validity, want time.Duration }{
		{time.Hour, time.Minute}, {5 * time.Minute, 30 * time.Second}, {5 * time.Second, time.Second}, {365 * 24 * time.Hour, time.Minute},
	} {
		if got := certs.SyncPeriod(tc.validity); got != tc.want {
			t.Errorf("SyncPeriod(%v) = %v, want %v", tc.validity, got, tc.want)
		}
	}
}

// TestAForeignKeyPairIsMadeAgain: a Secret edited by hand to hold an RSA
// or Ed25519 CA (probelet's own are ECDSA), or a certificate with another
// certificate's key, is read as absent and made again; it never panics
// the controller.
func TestAForeignKeyPairIsMadeAgain(t *testing.T) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	_, edKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	otherEC, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		caKey   crypto.Signer
		keyFile crypto.Signer // the key stored beside the certificate
		field   string        // which pair is replaced
	}{
		{"RSA CA", rsaKey, rsaKey, "ca"},
		// The CA replaced by hand, probelet's ECDSA key left beside it.
		{"RSA CA beside an ECDSA key", rsaKey, otherEC, "ca"},
		{"Ed25519 CA", edKey, edKey, "ca"},
		{"CA with another key", otherEC, mustEC(t), "ca"},
		{"RSA serving certificate", rsaKey, rsaKey, "leaf"},
		{"serving certificate with another key", otherEC, mustEC(t), "leaf"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.sync()
			sec, _ := e.cs.CoreV1().Secrets(ns).Get(context.Background(), secret, metav1.GetOptions{})
			certPEM := selfSigned(t, tc.caKey, e.clk.Now())
			keyPEM := pkcs8(t, tc.keyFile)
			if tc.field == "ca" {
				// First in the bundle is the CA in use; the old one stays
				// behind it, so the certificate served meanwhile is trusted.
				sec.Data[certs.KeyCABundle] = append(certPEM, sec.Data[certs.KeyCABundle]...)
				sec.Data[certs.KeyCAKey] = keyPEM
			} else {
				sec.Data[certs.KeyCert], sec.Data[certs.KeyKey] = certPEM, keyPEM
			}
			if _, err := e.cs.CoreV1().Secrets(ns).Update(context.Background(), sec, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			did := e.sync() // checks the served certificate is trusted
			t.Logf("%s: %s", tc.name, did)
			if did == "" {
				t.Errorf("sync left a %s it cannot use", tc.name)
			}
		})
	}
}

func mustEC(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// selfSigned is a CA certificate for key, valid for a day from now.
func selfSigned(t *testing.T, key crypto.Signer, now time.Time) []byte {
	t.Helper()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "hand-made"},
		NotBefore: now.Add(-time.Minute), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, DNSNames: []string{host}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func pkcs8(t *testing.T, key crypto.Signer) []byte {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}
