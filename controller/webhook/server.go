package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Path is where the webhook is served.
const Path = "/mutate-pods"

// maxReview bounds an AdmissionReview's body: the API server's own limit
// on a request (3 MiB) and room for the review around the object.
const maxReview = 4 << 20

const (
	// MaxObject is the largest pod the webhook parses. Converting one
	// costs about 90 times its size in heap (a 1.4 MB pod took 119 MiB):
	// 256 KiB is ~25 MiB, and MaxConcurrent of them stay near 100 MiB in
	// the controller's 256 Mi. A pod that large is almost all annotations
	// (the API allows 256 KiB of them) or inline data, never probes; it
	// is admitted unchanged, keeping the kubelet's probes, with a warning.
	MaxObject = 256 << 10
	// MaxConcurrent bounds the conversions in progress; a review waits
	// for its turn as long as the API server waits for the webhook.
	MaxConcurrent = 4
	// MaxReading bounds the reviews read at once up to MaxObject and the
	// review around it (maxSmallReview), MaxReadingLarge those larger,
	// which are held whole only to answer "too large". Reading costs
	// about three times a review's size (the body, the object's copy, the
	// decoder's): the webhook's heap stays under 16 × 1 MiB + 2 × 13 MiB +
	// the conversions' ~100 MiB, below the controller's 256 Mi with the
	// Lease monitor's ~30 MiB beside it, however many reviews the API
	// server sends.
	MaxReading      = 16
	MaxReadingLarge = 2
	maxSmallReview  = MaxObject + 64<<10
)

// The results the admissions metric counts.
const (
	ResultMutated   = "mutated"   // the probes moved
	ResultUnchanged = "unchanged" // no kubelet probes, or already converted
	ResultRefused   = "refused"   // left as it is: probelet would refuse its probes
	ResultSkipped   = "skipped"   // not a pod CREATE, or an excluded namespace
	ResultError     = "error"     // a review or pod that cannot be read; admitted as it is
	ResultTooLarge  = "too_large" // over MaxObject: admitted as it is, unparsed
	ResultOptedOut  = "opted_out" // labelled probelet.io/probes=unmanaged
)

// Handler answers the API server's AdmissionReviews for pods. It never
// denies: a pod it cannot convert is admitted as it is, with the kubelet's
// probes, which is safe.
type Handler struct {
	// Exclude are namespaces never mutated (kube-system, probelet's own),
	// whatever the webhook configuration's selectors say.
	Exclude    []string
	Log        *zap.Logger
	Admissions *prometheus.CounterVec // by result; nil: not counted
	// Durations times each review in this replica, from its arrival to
	// its answer: the webhook's own share of what the API server sees
	// (apiserver_admission_webhook_admission_duration_seconds adds the
	// network and the API server's waits). nil: not timed.
	Durations prometheus.Histogram

	// Turns: MaxConcurrent conversions, MaxReading and MaxReadingLarge
	// reviews read; made on first use.
	turns, reading, readingLarge chan struct{}
	once                         sync.Once
}

// NewAdmissions is the admissions counter a Handler takes.
func NewAdmissions() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Name: "probelet_webhook_admissions_total",
		Help: "Pod admissions answered by probelet's webhook, by result (mutated, unchanged, refused, skipped, error, too_large, opted_out)."},
		[]string{"result"})
}

// NewDurations is the review-time histogram a Handler takes; its buckets
// end at the webhook configuration's 2 s timeout.
func NewDurations() prometheus.Histogram {
	return prometheus.NewHistogram(prometheus.HistogramOpts{Name: "probelet_webhook_admission_duration_seconds",
		Help:    "Time from a pod admission review's arrival at this replica to its answer.",
		Buckets: []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2}})
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.Durations != nil {
		defer func(start time.Time) { h.Durations.Observe(time.Since(start).Seconds()) }(time.Now())
	}
	if r.Method != http.MethodPost {
		http.Error(w, "POST an AdmissionReview", http.StatusMethodNotAllowed)
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		http.Error(w, "Content-Type must be application/json", http.StatusUnsupportedMediaType)
		return
	}
	h.init()
	if r.ContentLength < 0 || r.ContentLength > maxSmallReview {
		// A pod over MaxObject is admitted unchanged either way: past
		// MaxReadingLarge at once, the API server admits it unchanged
		// now (failurePolicy Ignore) rather than at its timeout.
		select {
		case h.readingLarge <- struct{}{}:
			defer func() { <-h.readingLarge }()
		default:
			h.count(ResultTooLarge)
			http.Error(w, "too many large reviews at once", http.StatusTooManyRequests)
			return
		}
	} else {
		select {
		case h.reading <- struct{}{}:
			defer func() { <-h.reading }()
		case <-r.Context().Done():
			h.count(ResultError)
			return // the API server gave up on it (failurePolicy Ignore)
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxReview))
	if err != nil {
		http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
		return
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &review); err != nil || review.Request == nil {
		h.count(ResultError)
		http.Error(w, fmt.Sprintf("not an AdmissionReview: %v", err), http.StatusBadRequest)
		return
	}
	resp, result := h.review(r.Context(), review.Request)
	h.count(result)
	review.Request, review.Response = nil, resp
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(&review); err != nil {
		h.log().Warn("Cannot answer an admission review", zap.Error(err))
	}
}

// review decides one request.
func (h *Handler) review(ctx context.Context, req *admissionv1.AdmissionRequest) (*admissionv1.AdmissionResponse, string) {
	resp := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
	pods := metav1.GroupVersionResource{Version: "v1", Resource: "pods"}
	if req.Resource != pods || req.SubResource != "" || req.Operation != admissionv1.Create || slices.Contains(h.Exclude, req.Namespace) {
		return resp, ResultSkipped
	}
	pod := req.Namespace + "/" + req.Name
	if req.Name == "" {
		pod = req.Namespace + "/(generated name)"
	}
	if n := len(req.Object.Raw); n > MaxObject {
		h.log().Warn("A pod too large to convert; admitting it as it is", zap.String("pod", pod), zap.Int("bytes", n))
		resp.Warnings = []string{fmt.Sprintf("probelet: this pod keeps its kubelet probes: at %d bytes it is over the %d the webhook converts", n, MaxObject)}
		return resp, ResultTooLarge
	}
	h.init()
	select {
	case h.turns <- struct{}{}:
		defer func() { <-h.turns }()
	case <-ctx.Done():
		// The API server gave up on this review (failurePolicy Ignore
		// admits the pod as it is).
		return resp, ResultError
	}
	d, err := Mutate(req.Object.Raw)
	switch {
	case err != nil:
		h.log().Warn("Cannot convert a pod's probes; admitting it as it is", zap.String("pod", pod), zap.Error(err))
		resp.Warnings = []string{"probelet: this pod keeps its kubelet probes: " + err.Error()}
		return resp, ResultError
	case d.OptedOut:
		return resp, ResultOptedOut
	case len(d.Warnings) > 0:
		h.log().Info("Leaving a pod's kubelet probes", zap.String("pod", pod), zap.Strings("why", d.Warnings))
		resp.Warnings = d.Warnings
		return resp, ResultRefused
	case d.Patch == nil:
		return resp, ResultUnchanged
	}
	jsonPatch := admissionv1.PatchTypeJSONPatch
	resp.Patch, resp.PatchType = d.Patch, &jsonPatch
	h.log().Debug("Moved a pod's probes to probelet", zap.String("pod", pod), zap.Strings("probes", d.Moved))
	return resp, ResultMutated
}

func (h *Handler) init() {
	h.once.Do(func() {
		h.turns = make(chan struct{}, MaxConcurrent)
		h.reading = make(chan struct{}, MaxReading)
		h.readingLarge = make(chan struct{}, MaxReadingLarge)
	})
}

func (h *Handler) count(result string) {
	if h.Admissions != nil {
		h.Admissions.WithLabelValues(result).Inc()
	}
}

func (h *Handler) log() *zap.Logger {
	if h.Log == nil {
		return zap.NewNop()
	}
	return h.Log
}
