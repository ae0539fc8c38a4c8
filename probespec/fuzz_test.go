package probespec_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/probelet/probelet/probespec"
)

// FuzzParse checks Parse's contract on any input: it never panics; every
// rejection is a non-empty error naming the pod; a container is returned
// exactly when it has no error; and what is returned is defaulted, valid,
// and parses back to itself.
func FuzzParse(f *testing.F) {
	f.Add(`{"app": {"livenessProbe": {"tcpSocket": {"port": 8080}}}}`)
	f.Add("app:\n  readinessProbe:\n    httpGet: {port: http}\n")
	f.Fuzz(func(t *testing.T, value string) {
		probes, errs := probespec.Parse(web, value)
		checkErrors(t, errs)
		for name, cp := range probes {
			if errs.ForContainer(name).Len() != 0 {
				t.Fatalf("container %q returned despite errors: %v", name, errs.ForContainer(name))
			}
			checkAccepted(t, name, cp)
		}
	})
}

func checkErrors(t *testing.T, errs probespec.ErrorList) {
	t.Helper()
	for _, e := range errs {
		msg := e.Error()
		if e.Field == nil || e.Reason() == "" || !strings.HasPrefix(msg, "pod default/web: ") {
			t.Fatalf("unclear error %q (%+v)", msg, e)
		}
	}
}

// checkAccepted re-checks one returned container without trusting Parse.
func checkAccepted(t *testing.T, name string, cp probespec.ContainerProbes) {
	t.Helper()
	if errs := probespec.Validate(cp); len(errs) != 0 {
		t.Fatalf("accepted container %q does not validate: %v", name, errs)
	}
	again := *deepCopy(&cp)
	probespec.Default(&again)
	if !equality.Semantic.DeepEqual(cp, again) {
		t.Fatalf("accepted container %q was not fully defaulted", name)
	}
	data, err := json.Marshal(probespec.PodProbes{name: cp})
	if err != nil {
		t.Fatalf("marshal %q: %v", name, err)
	}
	reparsed, errs := probespec.Parse(web, string(data))
	if errs.Len() != 0 {
		t.Fatalf("accepted container %q does not parse back from %s: %v", name, data, errs)
	}
	if !equality.Semantic.DeepEqual(reparsed[name], cp) {
		t.Fatalf("round trip changed %q:\n%s", name, data)
	}
}

func deepCopy(cp *probespec.ContainerProbes) *probespec.ContainerProbes {
	return &probespec.ContainerProbes{
		Liveness:  cp.Liveness.DeepCopy(),
		Readiness: cp.Readiness.DeepCopy(),
		Startup:   cp.Startup.DeepCopy(),
	}
}

// FuzzResolvePort checks ResolvePort on any port and any ports annotation
// (the kubelet writes it, but the runtime hands probelet whatever the
// container was created with): it never panics, a port it returns is in
// 1-65535, a number is itself, and a name it finds is a containerPort the
// annotation declares under that name, or the name read as a number.
func FuzzResolvePort(f *testing.F) {
	for _, seed := range []struct {
		name   string
		number int32
		ports  string
	}{
		{"http", 0, `[{"name":"http","containerPort":8080,"protocol":"TCP"}]`},
		{"", 8080, ""},
		{"", 70000, ""},
		{"8081", 0, `[{"name":"http","containerPort":8080}]`},
		{"metrics", 0, `[{"name":"metrics","containerPort":-1},{"name":"metrics","containerPort":9090}]`},
		{"x", 0, `{"not":"a list"}`},
		{"x", 0, `[{"name":"x","containerPort":1e9}]`},
	} {
		f.Add(seed.name, seed.number, seed.ports)
	}
	f.Fuzz(func(t *testing.T, name string, number int32, ports string) {
		port := intstr.FromInt32(number)
		if name != "" {
			port = intstr.FromString(name)
		}
		n, err := probespec.ResolvePort(port, ports)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if n < 1 || n > 65535 {
			t.Fatalf("ResolvePort(%v, %q) = %d, outside 1-65535", port, ports, n)
		}
		if name == "" {
			if n != int(number) {
				t.Fatalf("ResolvePort(%d) = %d, want the number itself", number, n)
			}
			return
		}
		declared, perr := probespec.ParsePortsAnnotation(ports)
		for _, p := range declared {
			if p.Name == name {
				if perr != nil || int(p.ContainerPort) != n {
					t.Fatalf("ResolvePort(%q, %q) = %d, want the first %q port's %d", name, ports, n, name, p.ContainerPort)
				}
				return
			}
		}
		if num, aerr := strconv.Atoi(name); aerr != nil || num != n {
			t.Fatalf("ResolvePort(%q, %q) = %d: %q is neither declared nor that number", name, ports, n, name)
		}
	})
}
