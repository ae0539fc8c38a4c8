//go:build !linux

package rawtcp

// Dialer is Linux's; elsewhere its users dial with net.
type Dialer struct{}
