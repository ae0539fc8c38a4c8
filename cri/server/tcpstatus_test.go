package server_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	apiv1 "github.com/probelet/probelet/api/v1alpha1"
	"github.com/probelet/probelet/cri/server"
	"github.com/probelet/probelet/cri/server/servertest"
)

// TestTCPStatusIsWhereOperatorsLook: how TCP probes are answered, and why
// the short-circuit is not in force, in crictl info's conditions and
// verbose info and in probectl version's answer.
func TestTCPStatusIsWhereOperatorsLook(t *testing.T) {
	var current atomic.Pointer[server.TCPStatus]
	_, endpoint, _, _ := servertest.StartFixture(t, server.WithTCPStatus(func() server.TCPStatus { return *current.Load() }))
	conn := servertest.Dial(t, endpoint)
	rt, api := runtimeapi.NewRuntimeServiceClient(conn), apiv1.NewProbeletClient(conn)
	loadErr := "tracker: verifier rejected tracker.c: load program: permission denied"
	for _, tc := range []struct {
		name       string
		st         server.TCPStatus
		want       bool
		wantReason string
		wantWords  string
	}{
		{"loading", server.TCPStatus{Requested: "auto"}, false, "TrackerLoading", "is loading"},
		{"short-circuit", server.TCPStatus{Requested: "auto", Mode: "ebpf"}, true, "", ""},
		{"dial asked for", server.TCPStatus{Requested: "dial", Mode: "dial"}, false, "TCPModeDial", "--tcp-mode dial"},
		{"auto fell back", server.TCPStatus{Requested: "auto", Mode: "dial", Reason: loadErr}, false, "TrackerUnavailable", "--tcp-mode auto: the eBPF listener tracker did not load, so TCP probes dial: " + loadErr},
	} {
		t.Run(tc.name, func(t *testing.T) {
			current.Store(&tc.st)
			resp, err := rt.Status(context.Background(), &runtimeapi.StatusRequest{Verbose: true})
			if err != nil {
				t.Fatal(err)
			}
			var cond *runtimeapi.RuntimeCondition
			for _, c := range resp.Status.Conditions {
				if c.Type == server.ConditionTCPShortCircuit {
					cond = c
				}
			}
			if cond == nil || cond.Status != tc.want || cond.Reason != tc.wantReason || !strings.Contains(cond.Message, tc.wantWords) {
				t.Errorf("condition %v, want status %v, reason %q, a message with %q", cond, tc.want, tc.wantReason, tc.wantWords)
			}
			var info map[string]any
			if err := json.Unmarshal([]byte(resp.Info["probelet"]), &info); err != nil {
				t.Fatal(err)
			}
			if info["tcpMode"] != tc.st.Mode || info["tcpModeRequested"] != tc.st.Requested || info["tcpModeReason"] != tc.st.Reason {
				t.Errorf("verbose info %v, want %+v", info, tc.st)
			}
			v, err := api.Version(context.Background(), &apiv1.VersionRequest{})
			if err != nil {
				t.Fatal(err)
			}
			if v.TcpMode != tc.st.Mode || v.TcpModeRequested != tc.st.Requested || v.TcpModeReason != tc.st.Reason {
				t.Errorf("Version = %v, want %+v", v, tc.st)
			}
		})
	}
}

// Without a TCP status the server says nothing about TCP probes rather
// than guess.
func TestNoTCPStatusNoCondition(t *testing.T) {
	_, endpoint, _, _ := servertest.StartFixture(t)
	resp, err := runtimeapi.NewRuntimeServiceClient(servertest.Dial(t, endpoint)).Status(context.Background(), &runtimeapi.StatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range resp.Status.Conditions {
		if c.Type == server.ConditionTCPShortCircuit {
			t.Errorf("condition %v without a TCP status", c)
		}
	}
	if _, err := server.New(servertest.NewStatus(), servertest.NewView(), server.WithTCPStatus(nil)); err == nil {
		t.Error("WithTCPStatus(nil) accepted")
	}
}
