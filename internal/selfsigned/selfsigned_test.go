package selfsigned_test

import (
	"crypto/tls"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/probelet/probelet/internal/selfsigned"
)

// TestPinnedAcceptsOnlyThePinnedCertificate: a client pinned to one
// certificate talks to the listener serving it, and refuses another made
// for the same name.
func TestPinnedAcceptsOnlyThePinnedCertificate(t *testing.T) {
	now := time.Now()
	cert, pin, err := selfsigned.New("probelet-state node-1", now)
	if err != nil {
		t.Fatal(err)
	}
	impostor, other, err := selfsigned.New("probelet-state node-1", now)
	if err != nil {
		t.Fatal(err)
	}
	if pin == other || len(pin) != 64 {
		t.Fatalf("fingerprints %q and %q: want two different hex SHA-256", pin, other)
	}
	for _, tc := range []struct {
		name   string
		served tls.Certificate
		want   error
	}{
		{"the pinned certificate", cert, nil},
		{"another with the same name", impostor, selfsigned.ErrPinMismatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lis, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{tc.served}})
			if err != nil {
				t.Fatal(err)
			}
			defer lis.Close()
			go func() {
				c, err := lis.Accept()
				if err == nil {
					_ = c.(*tls.Conn).Handshake()
					c.Close()
				}
			}()
			conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", lis.Addr().String(), selfsigned.Pinned(pin))
			if conn != nil {
				conn.Close()
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("dial: %v, want %v", err, tc.want)
			}
		})
	}
}
