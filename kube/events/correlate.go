package events

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"
	"k8s.io/utils/lru"
)

// correlator is client-go's EventCorrelator (tools/record/events_cache.go),
// the kubelet's, rewritten so the agent does not link what that package
// links for its one patch: strategic merge patch, and through it
// kube-openapi and gnostic (about 1 MiB of the agent's resident memory).
// Same keys, caches, limits and results: events_correlate_test.go runs the
// two side by side. The Recorder calls it from one goroutine; the LRU
// caches lock anyway.
type correlator struct {
	clock  clock.PassiveClock
	qps    float32
	burst  int
	spam   *lru.Cache // spam key → flowcontrol.PassiveRateLimiter
	groups *lru.Cache // aggregate key → *aggregate
	seen   *lru.Cache // event key → observation
}

// The correlator's defaults, client-go's.
const (
	// cacheEntries bounds each of the three caches.
	cacheEntries = 4096
	// aggregateAfter similar events (same object and reason, different
	// messages) within aggregateWindow of each other become one
	// "(combined from similar events)" Event.
	aggregateAfter  = 10
	aggregateWindow = 600 * time.Second
	combinedPrefix  = "(combined from similar events): "
)

// aggregate is what the correlator remembers of similar events: their
// messages, and when the last came.
type aggregate struct {
	messages map[string]struct{}
	last     time.Time
}

// observation is what the correlator remembers of an Event it produced,
// to count its repeats on the same API object.
type observation struct {
	count           int32
	firstTimestamp  metav1.Time
	name            string
	resourceVersion string
}

// correlation is EventCorrelateResult: the Event to write, the patch that
// writes it over its earlier self when Count > 1, or skip (spam).
type correlation struct {
	event *corev1.Event
	patch []byte
	skip  bool
}

func newCorrelator(c clock.PassiveClock, qps float32, burst int) *correlator {
	return &correlator{clock: c, qps: qps, burst: burst,
		spam: lru.New(cacheEntries), groups: lru.New(cacheEntries), seen: lru.New(cacheEntries)}
}

// correlate aggregates ev with similar ones, counts its repeats and applies
// the per-object spam filter.
func (c *correlator) correlate(ev *corev1.Event) (correlation, error) {
	if ev == nil {
		return correlation{}, errors.New("event is nil")
	}
	aggregated, key := c.aggregate(ev)
	observed, patch, err := c.observe(aggregated, key)
	if c.spammed(observed) {
		return correlation{skip: true}, nil
	}
	return correlation{event: observed, patch: patch}, err
}

// updateState remembers an Event as the API server stored it.
func (c *correlator) updateState(ev *corev1.Event) {
	c.seen.Add(eventKey(ev), observation{count: ev.Count, firstTimestamp: ev.FirstTimestamp,
		name: ev.Name, resourceVersion: ev.ResourceVersion})
}

// aggregate returns ev, or once aggregateAfter different messages of ev's
// kind came within aggregateWindow, a combined Event in its place; and the
// key its repeats are counted under.
func (c *correlator) aggregate(ev *corev1.Event) (*corev1.Event, string) {
	now := metav1.NewTime(c.clock.Now())
	key, message := aggregateKey(ev), ev.Message
	var g *aggregate
	if v, ok := c.groups.Get(key); ok {
		g = v.(*aggregate)
	}
	if g == nil || now.Sub(g.last) > aggregateWindow {
		g = &aggregate{messages: map[string]struct{}{}}
	}
	g.messages[message] = struct{}{}
	g.last = now.Time
	c.groups.Add(key, g)
	if len(g.messages) < aggregateAfter {
		return ev, eventKey(ev)
	}
	// client-go drops one message (any) so the set stays at the limit
	// and every later message is combined too.
	for m := range g.messages {
		delete(g.messages, m)
		break
	}
	return &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("%v.%x", ev.InvolvedObject.Name, now.UnixNano()), Namespace: ev.Namespace},
		Count:          1,
		FirstTimestamp: now,
		InvolvedObject: ev.InvolvedObject,
		LastTimestamp:  now,
		Message:        combinedPrefix + ev.Message,
		Type:           ev.Type,
		Reason:         ev.Reason,
		Source:         ev.Source,
	}, key
}

// observe counts ev's repeats under key: a repeat takes the first one's
// name, version and first time, and a patch of what changed.
func (c *correlator) observe(ev *corev1.Event, key string) (*corev1.Event, []byte, error) {
	out := *ev
	var patch []byte
	var err error
	if v, ok := c.seen.Get(key); ok {
		if last := v.(observation); last.count > 0 {
			out.Name, out.ResourceVersion = last.name, last.resourceVersion
			out.FirstTimestamp, out.Count = last.firstTimestamp, last.count+1
			patch, err = repeatPatch(&out)
		}
	}
	c.seen.Add(key, observation{count: out.Count, firstTimestamp: out.FirstTimestamp,
		name: out.Name, resourceVersion: out.ResourceVersion})
	return &out, patch, err
}

// repeatPatch is the patch client-go computes with a two-way strategic
// merge between the repeat and itself with count, lastTimestamp and
// message cleared: those three fields, as the repeat has them (an empty
// message is omitted, as the Event's JSON omits it).
func repeatPatch(ev *corev1.Event) ([]byte, error) {
	return json.Marshal(struct {
		Count         int32       `json:"count"`
		LastTimestamp metav1.Time `json:"lastTimestamp"`
		Message       string      `json:"message,omitempty"`
	}{ev.Count, ev.LastTimestamp, ev.Message})
}

// spammed takes a token from ev's object's bucket; it reports whether
// there was none.
func (c *correlator) spammed(ev *corev1.Event) bool {
	key := spamKey(ev)
	var limiter flowcontrol.PassiveRateLimiter
	if v, ok := c.spam.Get(key); ok {
		limiter = v.(flowcontrol.PassiveRateLimiter)
	} else {
		limiter = flowcontrol.NewTokenBucketPassiveRateLimiterWithClock(c.qps, c.burst, c.clock)
	}
	spammed := !limiter.TryAccept()
	c.spam.Add(key, limiter)
	return spammed
}

// eventKey identifies an Event's repeats: everything but its times.
func eventKey(ev *corev1.Event) string {
	o := &ev.InvolvedObject
	return strings.Join([]string{ev.Source.Component, ev.Source.Host, o.Kind, o.Namespace, o.Name, o.FieldPath,
		string(o.UID), o.APIVersion, ev.Type, ev.Reason, ev.Message}, "")
}

// spamKey identifies the object an Event's spam filter counts against.
func spamKey(ev *corev1.Event) string {
	o := &ev.InvolvedObject
	return strings.Join([]string{ev.Source.Component, ev.Source.Host, o.Kind, o.Namespace, o.Name,
		string(o.UID), o.APIVersion, ev.Type}, "")
}

// aggregateKey identifies similar Events: the same object and reason,
// whatever the message (and container).
func aggregateKey(ev *corev1.Event) string {
	o := &ev.InvolvedObject
	return strings.Join([]string{ev.Source.Component, ev.Source.Host, o.Kind, o.Namespace, o.Name,
		string(o.UID), o.APIVersion, ev.Type, ev.Reason, ev.ReportingController, ev.ReportingInstance}, "")
}
