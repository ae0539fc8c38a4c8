// Package promutil holds probelet's one policy for registering Prometheus
// collectors.
package promutil

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Register registers every collector with r, or none: when one fails (a
// name taken by another component, say), the ones registered before it are
// unregistered again and the error names the failing collector. Each
// component owns its series; a second instance on the same registry is an
// error, not a silent share.
func Register(r prometheus.Registerer, cs ...prometheus.Collector) error {
	for i, c := range cs {
		if err := r.Register(c); err != nil {
			for _, done := range cs[:i] {
				r.Unregister(done)
			}
			return fmt.Errorf("register metrics %s: %w", describe(c), err)
		}
	}
	return nil
}

// describe names a collector by its first metric.
func describe(c prometheus.Collector) string {
	ch := make(chan *prometheus.Desc, 8)
	go func() {
		c.Describe(ch)
		close(ch)
	}()
	name := "(no metrics)"
	for i := 0; ; i++ {
		d, ok := <-ch
		if !ok {
			return name
		}
		if i == 0 {
			name = d.String()
		}
	}
}
