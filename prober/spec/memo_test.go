package spec_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/probelet/probelet/prober/spec"
)

func TestMemoParsesEachValueOnce(t *testing.T) {
	m := spec.NewMemo(2)
	a := `{"web": {"readinessProbe": {"tcpSocket": {"port": 8080}}}}`
	first := m.Parse(a)
	if first.Probes["web"].Readiness == nil || first.Probes["web"].Readiness.PeriodSeconds != spec.DefaultPeriodSeconds {
		t.Fatalf("parsed = %+v, want the defaulted readiness probe", first.Probes)
	}
	if again := m.Parse(a); again != first {
		t.Fatal("the same value was parsed again")
	}
	// Two more values evict the least recently used one (a).
	m.Parse(`{"b": {}}`)
	m.Parse(`{"c": {}}`)
	if m.Len() != 2 {
		t.Fatalf("memo holds %d values, want its bound 2", m.Len())
	}
	if m.Parse(a) == first {
		t.Fatal("an evicted value came back from the memo")
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
			p := spec.NewMemo(4).Parse(tc.value)
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
	m := spec.NewMemo(3)
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
