package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"go.uber.org/zap"
)

// /readyz: not before the webhook's certificate is loaded, and not once
// the replica drains.
func TestReadiness(t *testing.T) {
	loaded := false
	for _, tc := range []struct {
		name       string
		webhook    bool
		loaded     bool
		draining   bool
		wantStatus int
	}{
		{name: "no webhook", wantStatus: http.StatusOK},
		{name: "no certificate yet", webhook: true, wantStatus: http.StatusServiceUnavailable},
		{name: "a certificate", webhook: true, loaded: true, wantStatus: http.StatusOK},
		{name: "draining", webhook: true, loaded: true, draining: true, wantStatus: http.StatusServiceUnavailable},
		{name: "draining without a webhook", draining: true, wantStatus: http.StatusServiceUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &readiness{}
			if tc.webhook {
				r.certificate = func() bool { return loaded }
			}
			loaded = tc.loaded
			r.draining.Store(tc.draining)
			rec := httptest.NewRecorder()
			r.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
			if rec.Code != tc.wantStatus {
				t.Fatalf("status %d (%s), want %d", rec.Code, rec.Body, tc.wantStatus)
			}
		})
	}
}

// After the signal a replica serving the webhook is not ready at once
// and stops drainDelay later; one without it stops at once.
func TestDrainAfterTheSignal(t *testing.T) {
	for _, webhook := range []bool{false, true} {
		r := &readiness{}
		signalled, signal := context.WithCancel(context.Background())
		ctx := r.drainAfter(signalled, webhook, zap.NewNop())
		if ctx.Err() != nil || r.draining.Load() {
			t.Fatal("draining before the signal")
		}
		at := time.Now()
		signal()
		<-ctx.Done()
		took := time.Since(at)
		if !r.draining.Load() {
			t.Fatal("stopped without draining")
		}
		if webhook && took < drainDelay {
			t.Errorf("with the webhook it stopped %v after the signal, want at least %v", took, drainDelay)
		}
		if !webhook && took >= drainDelay {
			t.Errorf("without the webhook it waited %v", took)
		}
	}
}
