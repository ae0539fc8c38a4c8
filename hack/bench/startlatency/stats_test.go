package main

import (
	"testing"
	"time"
)

func TestSummarize(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	tests := []struct {
		name string
		in   []time.Duration
		want summary
	}{
		{"empty", nil, summary{}},
		{"one", ms(7), summary{n: 1, min: 7 * time.Millisecond, p50: 7 * time.Millisecond, p99: 7 * time.Millisecond, max: 7 * time.Millisecond}},
		{"unsorted four", ms(4, 1, 3, 2), summary{n: 4, min: time.Millisecond, p50: 2 * time.Millisecond, p99: 4 * time.Millisecond, max: 4 * time.Millisecond}},
		{"hundred", ms(seq(100)...), summary{n: 100, min: time.Millisecond, p50: 50 * time.Millisecond, p99: 99 * time.Millisecond, max: 100 * time.Millisecond}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := summarize(tc.in); got != tc.want {
				t.Errorf("summarize = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = n - i // descending, to exercise the sort
	}
	return out
}

func TestBetween(t *testing.T) {
	t0 := time.Unix(100, 0)
	samples := []sample{{startedAt: t0, firstProbe: t0.Add(3 * time.Millisecond)}, {startedAt: t0, firstProbe: t0.Add(-time.Millisecond)}}
	got := between(samples, func(s sample) time.Time { return s.startedAt }, func(s sample) time.Time { return s.firstProbe })
	if len(got) != 2 || got[0] != 3*time.Millisecond || got[1] != -time.Millisecond {
		t.Errorf("between = %v", got)
	}
}
