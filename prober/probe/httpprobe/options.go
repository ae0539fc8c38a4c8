package httpprobe

import "crypto/tls"

// Option configures a Prober. Options cannot fail, so New has no error to
// return.
type Option func(*Prober)

// WithTLSConfig replaces the TLS configuration, e.g. to present a client
// certificate. The kubelet's default skips verification; a config passed
// here is used as given. A nil config keeps the default.
func WithTLSConfig(c *tls.Config) Option {
	return func(p *Prober) {
		if c != nil {
			p.tlsConfig = c
		}
	}
}

// WithFollowNonLocalRedirects follows redirects to other hosts too (still
// at most 10 requests). The kubelet never enables this; it exists for
// parity with its prober's constructor.
func WithFollowNonLocalRedirects(follow bool) Option {
	return func(p *Prober) { p.followNonLocal = follow }
}

// WithNetHTTPTransport sends plain HTTP probes through net/http's
// Transport too, as the kubelet does, instead of the exchange on the
// probing goroutine (the answers are the same; it costs the node more
// thread wake-ups per probe).
func WithNetHTTPTransport() Option {
	return func(p *Prober) { p.netHTTPOnly = true }
}
