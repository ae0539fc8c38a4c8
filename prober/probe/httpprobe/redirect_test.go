package httpprobe_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/prober/probe/httpprobe"
)

const wantHost = "www.success.com"

// redirector serves the redirect fixtures:
//
//	/redirect?code=C&loc=L  C (default 302) to L, body "moved"
//	/chain/N                N more redirects, then 200 "end"
//	/loop                   to itself
//	/success, /fail         200 "ok", 500
//	/host                   200 if the Host is wantHost, else 400
func redirector(w http.ResponseWriter, r *http.Request) {
	switch p := r.URL.Path; {
	case p == "/redirect":
		code, err := strconv.Atoi(r.URL.Query().Get("code"))
		if err != nil {
			code = http.StatusFound
		}
		redirect(w, r.URL.Query().Get("loc"), code)
	case strings.HasPrefix(p, "/chain/"):
		n, _ := strconv.Atoi(strings.TrimPrefix(p, "/chain/"))
		if n == 0 {
			_, _ = w.Write([]byte("end"))
			return
		}
		redirect(w, fmt.Sprintf("/chain/%d", n-1), http.StatusFound)
	case p == "/loop":
		redirect(w, "/loop", http.StatusFound)
	case p == "/success":
		_, _ = w.Write([]byte("ok"))
	case p == "/host" && r.Host == wantHost:
		_, _ = w.Write([]byte("host ok"))
	case p == "/host":
		w.WriteHeader(http.StatusBadRequest)
	default:
		w.WriteHeader(http.StatusInternalServerError)
	}
}

func redirect(w http.ResponseWriter, loc string, code int) {
	w.Header().Set("Location", loc)
	w.WriteHeader(code)
	_, _ = w.Write([]byte("moved"))
}

func via(loc string, code int) string {
	return "/redirect?code=" + strconv.Itoa(code) + "&loc=" + url.QueryEscape(loc)
}

func TestProbeRedirects(t *testing.T) {
	seenByOther := make(chan seen, 32)
	other := serve(t, recordInto(seenByOther, redirector))
	main := serve(t, redirector)
	_, otherPort := splitHostPort(t, strings.TrimPrefix(other.URL, "http://"))
	otherHost := "http://localhost:" + strconv.Itoa(otherPort) // same server, another host name
	tests := []struct {
		name       string
		path       string
		opts       []httpprobe.Option
		wantResult probe.Result
		wantOutput string // substring
		wantOther  int    // requests the other server must see
	}{
		{"local redirect followed to success", via("/success", 302), nil, probe.Success, "ok", 0},
		{"local redirect followed to failure", via("/fail", 302), nil, probe.Failure, "statuscode: 500", 0},
		{"301 followed", via("/success", 301), nil, probe.Success, "ok", 0},
		{"303 followed", via("/success", 303), nil, probe.Success, "ok", 0},
		{"307 followed", via("/success", 307), nil, probe.Success, "ok", 0},
		{"308 followed", via("/success", 308), nil, probe.Success, "ok", 0},
		{"same host other port followed", via(other.URL+"/success", 302), nil, probe.Success, "ok", 1},
		{"same host other port failure", via(other.URL+"/fail", 302), nil, probe.Failure, "statuscode: 500", 1},
		{"other host not followed", via(otherHost+"/success", 302), nil,
			probe.Warning, "Probe terminated redirects, Response body: moved", 0},
		{"other host 301 not followed", via(otherHost+"/success", 301), nil,
			probe.Warning, "Probe terminated redirects, Response body: moved", 0},
		{"other host followed when enabled", via(otherHost+"/success", 302),
			[]httpprobe.Option{httpprobe.WithFollowNonLocalRedirects(true)}, probe.Success, "ok", 1},
		{"nine redirects followed", "/chain/9", nil, probe.Success, "end", 0},
		{"tenth redirect fails", "/chain/10", nil, probe.Failure, "stopped after 10 redirects", 0},
		{"tenth redirect fails when following other hosts", "/chain/10",
			[]httpprobe.Option{httpprobe.WithFollowNonLocalRedirects(true)}, probe.Failure, "stopped after 10 redirects", 0},
		{"redirect loop fails", "/loop", nil, probe.Failure, "stopped after 10 redirects", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, out, err := httpprobe.New(tc.opts...).Probe(context.Background(), targetOf(t, main, tc.path))
			if err != nil || res != tc.wantResult || !strings.Contains(out, tc.wantOutput) {
				t.Fatalf("Probe(%s) = (%s, %q, %v), want (%s, output containing %q, nil)", tc.path, res, out, err, tc.wantResult, tc.wantOutput)
			}
			if n := drain(seenByOther); n != tc.wantOther {
				t.Errorf("other server saw %d requests, want %d", n, tc.wantOther)
			}
		})
	}
}

// TestProbeHostHeaderAcrossRedirects pins the kubelet's behaviour, which is
// net/http's: a Host override survives a relative redirect; an absolute
// redirect (even to the same host) sends the Location's host instead.
func TestProbeHostHeaderAcrossRedirects(t *testing.T) {
	main := serve(t, redirector)
	tests := []struct {
		name       string
		host       string
		path       string
		wantResult probe.Result
	}{
		{"override survives relative redirect", wantHost, via("/host", 302), probe.Success},
		{"wrong override fails after relative redirect", "www.fail.com", via("/host", 302), probe.Failure},
		{"override survives a relative chain", wantHost, via(via("/host", 307), 302), probe.Success},
		{"absolute redirect resets host", wantHost, via(main.URL+"/host", 302), probe.Failure},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			target := targetOf(t, main, tc.path)
			target.Headers = []corev1.HTTPHeader{{Name: "Host", Value: tc.host}}
			res, out, err := httpprobe.New().Probe(context.Background(), target)
			if err != nil || res != tc.wantResult {
				t.Fatalf("Probe = (%s, %q, %v), want %s", res, out, err, tc.wantResult)
			}
		})
	}
}

// drain empties ch and returns how many items it held.
func drain(ch <-chan seen) int {
	for n := 0; ; n++ {
		select {
		case <-ch:
		default:
			return n
		}
	}
}
