package promutil_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/probelet/probelet/internal/promutil"
)

func TestRegisterIsAllOrNothing(t *testing.T) {
	reg := prometheus.NewRegistry()
	taken := prometheus.NewCounter(prometheus.CounterOpts{Name: "taken_total", Help: "x"})
	if err := promutil.Register(reg, taken); err != nil {
		t.Fatal(err)
	}
	fresh := prometheus.NewCounter(prometheus.CounterOpts{Name: "fresh_total", Help: "x"})
	again := prometheus.NewCounter(prometheus.CounterOpts{Name: "taken_total", Help: "x"})
	err := promutil.Register(reg, fresh, again)
	if err == nil || !strings.Contains(err.Error(), "taken_total") {
		t.Fatalf("err = %v, want one naming taken_total", err)
	}
	// fresh was rolled back: registering it again works.
	if err := promutil.Register(reg, fresh); err != nil {
		t.Fatalf("fresh was left registered: %v", err)
	}
}
