package main

import (
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr string
	}{
		{args: nil},
		{args: []string{"--webhook-listen="}},
		{args: []string{"--webhook-listen=", "--webhook-cert-validity=1s"}}, // no webhook, nothing to check
		{args: []string{"--webhook-cert-validity=1s"}, wantErr: "--webhook-cert-validity: 1s is shorter than 10s"},
		{args: []string{"--webhook-cert-hosts="}, wantErr: "--webhook-cert-hosts"},
		{args: []string{"--webhook-manage-cert=false", "--webhook-cert-hosts="}}, // the Secret is provided
		{args: []string{"--webhook-cert-secret="}, wantErr: "--webhook-cert-secret"},
		{args: []string{"--grace-period=0s"}, wantErr: "--grace-period"},
		{args: []string{"--grace-period=15s"}, wantErr: "--grace-period: 15s must be longer than --lease-renew-interval and a monitor pass (15s)"},
		{args: []string{"--grace-period=16s"}},
		{args: []string{"--lease-renew-interval=36s"}, wantErr: "--grace-period: 40s must be longer than"},
		{args: []string{"--lease-renew-interval=30s", "--grace-period=2m"}},
		{args: []string{"--lease-renew-interval=100ms"}, wantErr: "--lease-renew-interval: 100ms is not between 1s and 5m"},
		{args: []string{"--marking-rate=-1", "--webhook-cert-validity=1s"}, wantErr: "--marking-rate"},
		{args: []string{"stray"}, wantErr: `unexpected argument "stray"`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, err := parse(tt.args)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error %v, want one naming %q", err, tt.wantErr)
			}
		})
	}
	o, err := parse(nil)
	if err != nil || o.webhook.listen != ":9443" || o.webhook.validity != 90*24*time.Hour || !o.webhook.manageCert || o.grace != 40*time.Second {
		t.Fatalf("defaults %+v (%v)", o, err)
	}
}
