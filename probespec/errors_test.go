package probespec_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/probelet/probelet/probespec"
)

const twoBadContainers = `{
	"b": {"livenessProbe": {"tcpSocket": {"port": 0}, "periodSeconds": -1}},
	"a": {"readinessProbe": {"exec": {}}},
	"ok": {"readinessProbe": {"tcpSocket": {"port": 1}}}}`

func TestErrorList_PerContainerAccess(t *testing.T) {
	_, errs := probespec.Parse(web, twoBadContainers)
	if errs.Len() != 3 {
		t.Fatalf("Len = %d, want 3:\n%v", errs.Len(), errs)
	}
	if got := errs.Containers(); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("Containers = %v", got)
	}
	if got := errs.ForContainer("b").Len(); got != 2 {
		t.Errorf("ForContainer(b).Len = %d, want 2", got)
	}
	if got := errs.ForContainer("ok"); got != nil {
		t.Errorf("ForContainer(ok) = %v", got)
	}
	want := map[string]string{
		"a": "readinessProbe.exec.command: Required value",
		"b": "livenessProbe.tcpSocket.port: Invalid value: 0: must be between 1 and 65535, inclusive; " +
			"livenessProbe.periodSeconds: Invalid value: -1: must be greater than or equal to 0",
	}
	got := errs.ByContainer()
	if len(got) != len(want) || got["a"] != want["a"] || got["b"] != want["b"] {
		t.Errorf("ByContainer =\n%q\nwant\n%q", got, want)
	}
}

func TestErrorList_IsAnErrorOnePerLine(t *testing.T) {
	_, errs := probespec.Parse(web, twoBadContainers)
	err := errs.Err()
	if err == nil {
		t.Fatal("Err() = nil for a non-empty list")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], `pod default/web: container "a": `) {
		t.Errorf("Error() = %q", err.Error())
	}
	var fe *field.Error
	if !errors.As(err, &fe) || fe.Type != field.ErrorTypeRequired {
		t.Errorf("errors.As found %v", fe)
	}
	var se *probespec.Error
	if !errors.As(err, &se) || se.Container != "a" || se.Pod != web {
		t.Errorf("errors.As spec.Error found %+v", se)
	}
}

func TestErrorList_EmptyMeansValid(t *testing.T) {
	_, errs := probespec.Parse(web, `{"ok": {"readinessProbe": {"tcpSocket": {"port": 1}}}}`)
	if errs.Len() != 0 || errs.Err() != nil || errs.ByContainer() != nil || errs.Containers() != nil {
		t.Errorf("valid annotation gave %v", errs)
	}
}

func TestPodRef_String(t *testing.T) {
	tests := []struct {
		ref  probespec.PodRef
		want string
	}{
		{probespec.PodRef{Namespace: "default", Name: "web"}, "default/web"},
		{probespec.PodRef{Name: "web"}, "web"},
		{probespec.PodRef{}, "<unnamed>"},
		{probespec.PodRef{Namespace: "kube-system"}, "kube-system/<unnamed>"},
	}
	for _, tc := range tests {
		if got := tc.ref.String(); got != tc.want {
			t.Errorf("%+v.String() = %q, want %q", tc.ref, got, tc.want)
		}
	}
}
