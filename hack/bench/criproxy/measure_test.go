package main

import (
	"math"
	"testing"
	"time"
)

func TestQuantileInterpolatesInsideTheBucket(t *testing.T) {
	h := histogramDelta{count: 10, sum: 0.1, bounds: []float64{0.005, 0.01, 0.025, math.Inf(1)}, buckets: []uint64{0, 4, 10, 10}}
	if got, want := h.quantile(0.5), 10*time.Millisecond+time.Duration(float64(15*time.Millisecond)/6); got != want {
		t.Errorf("p50 = %v, want %v", got, want)
	}
	if got := h.quantile(0.2); got != 5*time.Millisecond+time.Duration(float64(5*time.Millisecond)/2) {
		t.Errorf("p20 = %v", got)
	}
	if got := h.mean(); got != 10*time.Millisecond {
		t.Errorf("mean = %v", got)
	}
	if (histogramDelta{}).quantile(0.5) != 0 {
		t.Error("empty histogram has a quantile")
	}
}

func TestKlogTime(t *testing.T) {
	got, err := klogTime(`I1124 05:24:22.594024    8563 kubelet.go:2788] "SyncLoop (PLEG): event for pod"`)
	if err != nil {
		t.Fatal(err)
	}
	want := time.Date(time.Now().Year(), 11, 24, 5, 24, 22, 594024000, time.Local)
	if !got.Equal(want) {
		t.Errorf("klogTime = %v, want %v", got, want)
	}
}

func TestSummarize(t *testing.T) {
	s := summarize([]time.Duration{3, 1, 2, 4})
	if s.n != 4 || s.p50 != 2 || s.p99 != 4 || s.max != 4 {
		t.Errorf("summary = %+v", s)
	}
}
