package probespec_test

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/probelet/probelet/probespec"
)

func TestMemoParsesEachValueOnce(t *testing.T) {
	m := probespec.NewMemo(1 << 20)
	a := `{"web": {"readinessProbe": {"tcpSocket": {"port": 8080}}}}`
	first := m.Parse(a)
	if first.Probes["web"].Readiness == nil || first.Probes["web"].Readiness.PeriodSeconds != probespec.DefaultPeriodSeconds {
		t.Fatalf("parsed = %+v, want the defaulted readiness probe", first.Probes)
	}
	if again := m.Parse(a); again != first {
		t.Fatal("the same value was parsed again")
	}
}

// The memo is bounded in bytes, not values: a few large annotations evict
// as many small ones would, and one larger than the bound is not kept.
func TestMemoIsBoundedInBytes(t *testing.T) {
	value := func(name string, size int) string {
		return fmt.Sprintf(`{"%s": {"livenessProbe": {"exec": {"command": ["%s"]}}}}`, name, strings.Repeat("x", size))
	}
	tests := []struct {
		name     string
		bound    int
		values   []string
		wantKept []int // indexes of the values kept
	}{
		{"small values all fit", 64 << 10, []string{value("a", 10), value("b", 10), value("c", 10)}, []int{0, 1, 2}},
		{"large values evict the oldest", 64 << 10, []string{value("a", 20<<10), value("b", 20<<10), value("c", 20<<10)}, []int{2}},
		{"a value over the bound is not kept", 8 << 10, []string{value("a", 10), value("b", 10<<10)}, []int{0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := probespec.NewMemo(tc.bound)
			parsed := make([]*probespec.Parsed, len(tc.values))
			for i, v := range tc.values {
				parsed[i] = m.Parse(v)
			}
			if m.Bytes() > tc.bound || m.Len() != len(tc.wantKept) {
				t.Fatalf("memo holds %d values, %d bytes; want %d values within %d bytes", m.Len(), m.Bytes(), len(tc.wantKept), tc.bound)
			}
			for _, i := range tc.wantKept {
				if m.Parse(tc.values[i]) != parsed[i] {
					t.Errorf("value %d was not kept", i)
				}
			}
		})
	}
}

func TestOversizedAnnotationIsRejectedUnread(t *testing.T) {
	value := `{"web": {"livenessProbe": {"exec": {"command": ["` + strings.Repeat("x", probespec.MaxAnnotationBytes) + `"]}}}}`
	ref := probespec.PodRef{Namespace: "ns", Name: "big"}
	probes, errs := probespec.Parse(ref, value)
	if len(probes) != 0 || len(errs) != 1 {
		t.Fatalf("Parse = %v, %v; want one error and no probes", probes, errs)
	}
	want := fmt.Sprintf("pod ns/big: annotation probelet.io/probes: %d bytes, over the limit of 65536 (64 KiB)", len(value))
	if errs[0].Error() != want {
		t.Errorf("error %q, want %q", errs[0].Error(), want)
	}
	if got := probespec.NewMemo(1 << 20).Parse(value).ErrorFor("web"); !strings.Contains(got, "over the limit") {
		t.Errorf("the memo's error for a container: %q", got)
	}
}

func TestMemoErrorsPerContainer(t *testing.T) {
	tests := []struct {
		name, value string
		want        map[string]string // container → substring of ErrorFor
	}{
		{"valid", `{"web": {"livenessProbe": {"tcpSocket": {"port": 1}}}}`, map[string]string{"web": "", "other": ""}},
		{"one container rejected", `{"web": {"livenessProbe": {"tcpSocket": {"port": 1}, "successThreshold": 2}}, "ok": {}}`,
			map[string]string{"web": "successThreshold", "ok": "", "other": ""}},
		{"unreadable value reaches every container", `{broken`,
			map[string]string{"web": "annotation probelet.io/probes", "other": "annotation probelet.io/probes"}},
		{"no annotation", "", map[string]string{"web": ""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := probespec.NewMemo(1 << 20).Parse(tc.value)
			for name, sub := range tc.want {
				got := p.ErrorFor(name)
				if (sub == "") != (got == "") || !strings.Contains(got, sub) {
					t.Errorf("ErrorFor(%q) = %q, want %q", name, got, sub)
				}
			}
		})
	}
}

func TestMemoIsSafeForConcurrentUse(t *testing.T) {
	m := probespec.NewMemo(1 << 20)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 50 {
				v := fmt.Sprintf(`{"c%d": {}}`, (i+j)%5)
				if p := m.Parse(v); p.Value != v {
					t.Errorf("Parse(%s).Value = %s", v, p.Value)
				}
			}
		}()
	}
	wg.Wait()
}

// ForPod is Check's policy applied to a shared parse: the node rejects
// what `probelet validate` rejects, in the same words.
func TestForPodAppliesChecksPolicy(t *testing.T) {
	const value = `{"app": {"readinessProbe": {"tcpSocket": {"port": "http"}}}, "side": {"livenessProbe": {"tcpSocket": {"port": 1}}}}`
	withPorts := func(ps ...corev1.ContainerPort) *corev1.PodSpec {
		return &corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Ports: ps}, {Name: "side"}}}
	}
	tests := []struct {
		name    string
		podSpec *corev1.PodSpec
		same    bool // the shared parse itself
	}{
		{"no pod spec", nil, true},
		{"the named port resolves", withPorts(corev1.ContainerPort{Name: "http", ContainerPort: 80}), true},
		{"the named port does not resolve", withPorts(), false},
		{"a probed container is missing", &corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			shared := probespec.NewMemo(1 << 20).Parse(value)
			got := shared.ForPod(tc.podSpec)
			if (got == shared) != tc.same {
				t.Fatalf("ForPod returned the shared parse: %v, want %v", got == shared, tc.same)
			}
			ref := probespec.PodRef{Namespace: "ns", Name: "web"}
			want := probespec.Check(ref, value, tc.podSpec)
			if !reflect.DeepEqual(got.Probes, want.Probes) {
				t.Errorf("probes %v, want Check's %v", got.Probes, want.Probes)
			}
			if g, w := got.List.For(ref).Strings(), want.Errors.Strings(); !slices.Equal(g, w) {
				t.Errorf("errors %q, want Check's %q", g, w)
			}
			if !reflect.DeepEqual(got.Errors, want.Errors.ByContainer()) {
				t.Errorf("errors by container %v, want %v", got.Errors, want.Errors.ByContainer())
			}
		})
	}
}
