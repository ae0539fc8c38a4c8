package httpprobe

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/probelet/probelet/prober/probe/tcpprobe"
)

// LifecycleUserAgent is the kubelet v1.37's User-Agent for httpGet
// lifecycle hooks, sent unless the hook sets its own.
const LifecycleUserAgent = "kube-lifecycle/1.37"

// LifecycleClient is the kubelet's client for httpGet lifecycle hooks
// (insecureContainerLifecycleHTTPClient): TLS unverified, as it has nothing
// to verify against, redirects followed on the same host only, no timeout
// of its own (the kill's grace bounds a hook, through its context). Unlike
// the kubelet's it keeps no idle connection — a hook is one request —,
// bounds the response's headers as probes' are (MaxResponseHeaderBytes),
// and dials from the pod's network namespace when the request's context
// carries one (a pod whose probes come from there). HTTP/1.1 only, as the
// kubelet's (a TLS config of its own turns net/http's HTTP/2 off), so no
// connection is ever shared between pods' namespaces.
func LifecycleClient() *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			TLSClientConfig:        &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the kubelet's: nothing to verify against
			DisableKeepAlives:      true,
			MaxResponseHeaderBytes: MaxResponseHeaderBytes,
			DialContext:            tcpprobe.OriginDial((&net.Dialer{}).DialContext),
		},
		CheckRedirect: checkRedirect,
	}
}

// RunLifecycleGet sends an httpGet lifecycle hook's request as the
// kubelet's handler runner does: any answer is success (the status is not
// looked at), only a failure to get one is an error; an HTTPS request
// answered in plain HTTP is sent again over HTTP without its Authorization
// header, and when that succeeds fellBackTo names the host (the kubelet's
// LifecycleHTTPFallback event). At most 10 KiB of a body is read.
func RunLifecycleGet(ctx context.Context, c *http.Client, t Target) (fellBackTo string, err error) {
	if t.Port < 1 || t.Port > 65535 {
		return "", fmt.Errorf("lifecycle hook: port %d out of range 1-65535", t.Port)
	}
	req, err := request(ctx, t, LifecycleUserAgent, "lifecycle hook")
	if err != nil {
		return "", err
	}
	resp, err := c.Do(req)
	discard(resp)
	if !gotHTTPResponse(err) {
		return "", err
	}
	retry := req.Clone(ctx)
	retry.URL.Scheme = "http"
	retry.Header.Del("Authorization")
	resp, retryErr := c.Do(retry)
	discard(resp)
	if retryErr != nil {
		return "", err // the kubelet reports the first error
	}
	return retry.URL.Host, nil
}

// discard reads what the kubelet reads of a hook's answer (a body of at
// most 10 KiB, so the connection could be kept) and closes it.
func discard(resp *http.Response) {
	if resp == nil {
		return
	}
	defer resp.Body.Close()
	if resp.ContentLength <= maxBodyLength {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxBodyLength))
	}
}

// gotHTTPResponse is the kubelet's isHTTPResponseError: an HTTPS request
// that got a plain-HTTP answer.
func gotHTTPResponse(err error) bool {
	var ue *url.Error
	return err != nil && errors.As(err, &ue) && ue.Err != nil &&
		strings.Contains(ue.Err.Error(), "server gave HTTP response to HTTPS client")
}
