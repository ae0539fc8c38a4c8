package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"

	"github.com/probelet/probelet/internal/cluster"
)

// clockTicks is USER_HZ, the unit of /proc/PID/stat's CPU times (100 on
// every Linux the project runs on).
const clockTicks = 100

// cpuSeconds is the CPU time (user + system) pid used so far.
func cpuSeconds(pid int) (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(data, ')')
	f := strings.Fields(string(data[i+1:]))
	// After the command: state is field 3, utime 14, stime 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	u, err1 := strconv.ParseFloat(f[11], 64)
	s, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("bad /proc/%d/stat", pid)
	}
	return (u + s) / clockTicks, nil
}

func httpGet(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: nil}}).Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return io.ReadAll(resp.Body)
}

func kubeletMetrics(ctx context.Context, k *cluster.Kubelet) (map[string]*dto.MetricFamily, error) {
	data, err := httpGet(ctx, k.ReadOnlyURL()+"/metrics")
	if err != nil {
		return nil, err
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(bytes.NewReader(data))
}

func counter(mfs map[string]*dto.MetricFamily, name string) float64 {
	var v float64
	for _, m := range mfs[name].GetMetric() {
		v += m.GetCounter().GetValue() + m.GetGauge().GetValue()
	}
	return v
}

// histogramDelta is a histogram's observations between two scrapes.
type histogramDelta struct {
	count   uint64
	sum     float64
	bounds  []float64
	buckets []uint64 // cumulative
}

func relistDelta(a, b map[string]*dto.MetricFamily) histogramDelta {
	const name = "kubelet_pleg_relist_duration_seconds"
	ha := firstHistogram(a[name])
	hb := firstHistogram(b[name])
	if hb == nil {
		return histogramDelta{}
	}
	d := histogramDelta{count: hb.GetSampleCount(), sum: hb.GetSampleSum()}
	if ha != nil {
		d.count -= ha.GetSampleCount()
		d.sum -= ha.GetSampleSum()
	}
	for i, bk := range hb.GetBucket() {
		c := bk.GetCumulativeCount()
		if ha != nil && i < len(ha.GetBucket()) {
			c -= ha.GetBucket()[i].GetCumulativeCount()
		}
		d.bounds = append(d.bounds, bk.GetUpperBound())
		d.buckets = append(d.buckets, c)
	}
	return d
}

func firstHistogram(mf *dto.MetricFamily) *dto.Histogram {
	if mf == nil || len(mf.GetMetric()) == 0 {
		return nil
	}
	return mf.GetMetric()[0].GetHistogram()
}

func (h histogramDelta) mean() time.Duration {
	if h.count == 0 {
		return 0
	}
	return time.Duration(h.sum / float64(h.count) * float64(time.Second))
}

// quantile interpolates linearly inside the bucket holding q.
func (h histogramDelta) quantile(q float64) time.Duration {
	if h.count == 0 {
		return 0
	}
	want := q * float64(h.count)
	lower, prev := 0.0, uint64(0)
	for i, c := range h.buckets {
		if float64(c) >= want {
			upper := h.bounds[i]
			if math.IsInf(upper, 1) {
				upper = lower
			}
			frac := 0.0
			if c > prev {
				frac = (want - float64(prev)) / float64(c-prev)
			}
			return time.Duration((lower + frac*(upper-lower)) * float64(time.Second))
		}
		lower, prev = h.bounds[i], c
	}
	return time.Duration(lower * float64(time.Second))
}

func kubeletPods(ctx context.Context, k *cluster.Kubelet) ([]corev1.Pod, error) {
	data, err := httpGet(ctx, k.ReadOnlyURL()+"/pods")
	if err != nil {
		return nil, err
	}
	var list corev1.PodList
	err = json.Unmarshal(data, &list)
	return list.Items, err
}

// waitPods waits until the kubelet reports n pods running, every exit-N
// pod's container with restarts restarts and the others with none.
func waitPods(ctx context.Context, k *cluster.Kubelet, n int, restarts int32) ([]corev1.Pod, error) {
	deadline := time.Now().Add(podsTimeout)
	last := ""
	for time.Now().Before(deadline) {
		pods, err := kubeletPods(ctx, k)
		if err == nil {
			running := 0
			for _, p := range pods {
				for _, s := range p.Status.ContainerStatuses {
					want := int32(0)
					if strings.HasPrefix(p.Name, "exit-") {
						want = restarts
					}
					if s.State.Running != nil && s.RestartCount == want {
						running++
					}
				}
			}
			if running == n && len(pods) == n {
				return pods, nil
			}
			last = fmt.Sprintf("%d of %d running as expected", running, len(pods))
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return nil, fmt.Errorf("pods not running after %v: %s", podsTimeout, last)
}

// runningContainer is the ID of the running container of the pod whose
// name starts with prefix, at restart count attempt.
func runningContainer(ctx context.Context, k *cluster.Kubelet, prefix string, attempt int32) (string, error) {
	pods, err := kubeletPods(ctx, k)
	if err != nil {
		return "", err
	}
	for _, p := range pods {
		if !strings.HasPrefix(p.Name, prefix) {
			continue
		}
		for _, s := range p.Status.ContainerStatuses {
			if s.State.Running != nil && s.RestartCount == attempt {
				_, id, _ := strings.Cut(s.ContainerID, "://")
				return id, nil
			}
		}
	}
	return "", fmt.Errorf("no running container in %s* at restart %d", prefix, attempt)
}

func fileSize(path string) (int64, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

func killPID(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }

// waitPLEGDied follows the kubelet's log from offset until its PLEG
// reports the container died, and returns the line's time.
func waitPLEGDied(ctx context.Context, path string, offset int64, id string, limit time.Duration) (time.Time, error) {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		f, err := os.Open(path)
		if err != nil {
			return time.Time{}, err
		}
		if _, err := f.Seek(offset, io.SeekStart); err != nil {
			f.Close()
			return time.Time{}, err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if strings.Contains(line, "SyncLoop (PLEG): event for pod") && strings.Contains(line, `"Type":"ContainerDied"`) &&
				strings.Contains(line, id) {
				f.Close()
				return klogTime(line)
			}
		}
		f.Close()
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	return time.Time{}, fmt.Errorf("the kubelet's PLEG did not report %s died within %v", id, limit)
}

// klogTime reads a klog header ("I1124 05:24:22.594024 ..."), local time,
// this year.
func klogTime(line string) (time.Time, error) {
	if len(line) < 21 {
		return time.Time{}, fmt.Errorf("short klog line %q", line)
	}
	t, err := time.ParseInLocation("0102 15:04:05.000000", line[1:21], time.Local)
	if err != nil {
		return time.Time{}, err
	}
	return t.AddDate(time.Now().Year(), 0, 0), nil
}

// summary is p50/p99/max of durations.
type summary struct {
	n             int
	p50, p99, max time.Duration
}

func summarize(ds []time.Duration) summary {
	if len(ds) == 0 {
		return summary{}
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	at := func(q float64) time.Duration { return s[int(math.Ceil(q*float64(len(s))))-1] }
	return summary{n: len(s), p50: at(0.5), p99: at(0.99), max: s[len(s)-1]}
}
