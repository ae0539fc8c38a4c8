package spec_test

import (
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/probelet/probelet/prober/spec"
)

// FuzzParse checks Parse's contract on any input: it never panics; every
// rejection is a non-empty error naming the pod; a container is returned
// exactly when it has no error; and what is returned is defaulted, valid,
// and parses back to itself.
func FuzzParse(f *testing.F) {
	f.Add(`{"app": {"livenessProbe": {"tcpSocket": {"port": 8080}}}}`)
	f.Add("app:\n  readinessProbe:\n    httpGet: {port: http}\n")
	f.Fuzz(func(t *testing.T, value string) {
		probes, errs := spec.Parse(web, value)
		checkErrors(t, errs)
		for name, cp := range probes {
			if errs.ForContainer(name).Len() != 0 {
				t.Fatalf("container %q returned despite errors: %v", name, errs.ForContainer(name))
			}
			checkAccepted(t, name, cp)
		}
	})
}

func checkErrors(t *testing.T, errs spec.ErrorList) {
	t.Helper()
	for _, e := range errs {
		msg := e.Error()
		if e.Field == nil || e.Reason() == "" || !strings.HasPrefix(msg, "pod default/web: ") {
			t.Fatalf("unclear error %q (%+v)", msg, e)
		}
	}
}

// checkAccepted re-checks one returned container without trusting Parse.
func checkAccepted(t *testing.T, name string, cp spec.ContainerProbes) {
	t.Helper()
	if errs := spec.Validate(cp); len(errs) != 0 {
		t.Fatalf("accepted container %q does not validate: %v", name, errs)
	}
	again := *deepCopy(&cp)
	spec.Default(&again)
	if !equality.Semantic.DeepEqual(cp, again) {
		t.Fatalf("accepted container %q was not fully defaulted", name)
	}
	data, err := json.Marshal(spec.PodProbes{name: cp})
	if err != nil {
		t.Fatalf("marshal %q: %v", name, err)
	}
	reparsed, errs := spec.Parse(web, string(data))
	if errs.Len() != 0 {
		t.Fatalf("accepted container %q does not parse back from %s: %v", name, data, errs)
	}
	if !equality.Semantic.DeepEqual(reparsed[name], cp) {
		t.Fatalf("round trip changed %q:\n%s", name, data)
	}
}

func deepCopy(cp *spec.ContainerProbes) *spec.ContainerProbes {
	return &spec.ContainerProbes{
		Liveness:  cp.Liveness.DeepCopy(),
		Readiness: cp.Readiness.DeepCopy(),
		Startup:   cp.Startup.DeepCopy(),
	}
}
