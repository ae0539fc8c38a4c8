// Package selfsigned makes a TLS certificate that only its fingerprint
// vouches for: probelet's state listener makes one at each start and
// publishes its SHA-256 in the node's Lease, and the probe-state API pins
// it from there. No CA, no key on disk, nothing to rotate: a restart is a
// new certificate and a new pin.
package selfsigned

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"errors"
	"math/big"
	"time"
)

// validity is long: the pin, not the dates, is what is checked, and a
// node agent runs for months.
const validity = 10 * 365 * 24 * time.Hour

// New returns a certificate for commonName with an ECDSA P-256 key and the
// hex SHA-256 of its DER form.
func New(commonName string, now time.Time) (tls.Certificate, string, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, "", err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	if err != nil {
		return tls.Certificate{}, "", err
	}
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: commonName},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(validity),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, "", err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, Fingerprint(der), nil
}

// Fingerprint is the hex SHA-256 of a DER certificate.
func Fingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	return hex.EncodeToString(sum[:])
}

// Pinned is a client TLS configuration that accepts exactly the
// certificate whose fingerprint is pin, whatever its names and dates.
func Pinned(pin string) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		// The chain is not what vouches for the peer: the pin is, checked
		// below on the one certificate it presents.
		InsecureSkipVerify: true, //nolint:gosec // the pin replaces chain verification
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) == 0 || Fingerprint(raw[0]) != pin {
				return ErrPinMismatch
			}
			return nil
		},
	}
}

// ErrPinMismatch is Pinned's refusal.
var ErrPinMismatch = errors.New("the peer's certificate is not the one its node's Lease names (probelet restarted, or something else answers)")
