// Package stateauth decides who may read a node's probe state over the
// network, as the kubelet decides who may use its API: the caller's bearer
// token is reviewed by the API server (TokenReview, for the probe-state
// audience only, so that a token for it is worth nothing elsewhere), and
// what the caller may do is asked of RBAC (SubjectAccessReview: get
// nodes/podprobes in probes.probelet.io, on this node's name).
//
// Answers are cached for the kubelet's default times (a token 2 minutes, an
// allowed read 5, a denied one 30 s) in bounded caches, and reviews are
// rate limited: a pod that floods the listener with made-up tokens costs
// the API server at most reviewRate reviews a second, and the controller's
// token, reviewed once, stays in the cache through the flood.
package stateauth

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"

	"github.com/probelet/probelet/kube"
	"github.com/probelet/probelet/probespec"
)

// nodeResource is the resource RBAC is asked about, with
// probespec.StateNodeSubresource: nodes/podprobes.
const nodeResource = "nodes"

// The kubelet's defaults for its webhook authenticator and authorizer.
const (
	tokenTTL   = 2 * time.Minute
	allowTTL   = 5 * time.Minute
	denyTTL    = 30 * time.Second
	failTTL    = 10 * time.Second // a token the API server rejected
	maxEntries = 256
	// reviewRate and reviewBurst bound the reviews a node asks for.
	reviewRate  = 5
	reviewBurst = 10
)

// The reasons a read is refused. Callers map them to their protocol's
// codes (gRPC Unauthenticated, PermissionDenied, Unavailable).
var (
	ErrNoToken       = errors.New("no bearer token")
	ErrUnauthorized  = errors.New("token not accepted")
	ErrForbidden     = errors.New("forbidden")
	ErrReviewsBusy   = errors.New("too many reviews: try again")
	ErrReviewsFailed = errors.New("the API server could not review the request")
)

// Guard answers whether a bearer token may read this node's probe state.
type Guard struct {
	client   kube.Client
	node     string
	clock    clock.PassiveClock
	reviews  flowcontrol.PassiveRateLimiter
	mu       sync.Mutex
	tokens   map[[32]byte]tokenEntry
	verdicts map[string]verdict
}

type tokenEntry struct {
	user    *authenticationv1.UserInfo // nil: rejected
	expires time.Time
}

// known reports whether the entry is a token the API server accepted: its
// next review skips the rate limit, so that a flood of made-up tokens
// (each a review) cannot keep out a caller whose token was good.
func (e tokenEntry) known() bool { return e.user != nil }

type verdict struct {
	allowed bool
	reason  string
	expires time.Time
}

// New returns a Guard for node's state. clk may be nil (the real clock).
func New(client kube.Client, node string, clk clock.PassiveClock) *Guard {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Guard{client: client, node: node, clock: clk,
		reviews: flowcontrol.NewTokenBucketPassiveRateLimiterWithClock(reviewRate, reviewBurst, clk),
		tokens:  map[[32]byte]tokenEntry{}, verdicts: map[string]verdict{}}
}

// Allow returns the caller's user name when the token may read the node's
// probe state, else one of the errors above (wrapped with the detail).
func (g *Guard) Allow(ctx context.Context, token string) (string, error) {
	if token == "" {
		return "", ErrNoToken
	}
	user, err := g.authenticate(ctx, token)
	if err != nil {
		return "", err
	}
	if err := g.authorize(ctx, user); err != nil {
		return user.Username, err
	}
	return user.Username, nil
}

// BearerToken is the token of an Authorization header value, "" if it has
// none.
func BearerToken(header string) string {
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return ""
	}
	return strings.TrimSpace(token)
}

func (g *Guard) authenticate(ctx context.Context, token string) (*authenticationv1.UserInfo, error) {
	key := sha256.Sum256([]byte(token))
	now := g.clock.Now()
	g.mu.Lock()
	e, ok := g.tokens[key]
	g.mu.Unlock()
	if ok && now.Before(e.expires) {
		if e.user == nil {
			return nil, ErrUnauthorized
		}
		return e.user, nil
	}
	if !(ok && e.known()) && !g.reviews.TryAccept() {
		return nil, ErrReviewsBusy
	}
	out, err := g.client.ReviewToken(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{
		Token: token, Audiences: []string{probespec.StateAudience}}})
	if err != nil {
		return nil, fmt.Errorf("%w: TokenReview: %v", ErrReviewsFailed, err)
	}
	if !out.Status.Authenticated || !audienceIn(out.Status.Audiences) {
		g.remember(func() { g.tokens[key] = tokenEntry{expires: now.Add(failTTL)} })
		if out.Status.Error != "" {
			return nil, fmt.Errorf("%w: %s", ErrUnauthorized, out.Status.Error)
		}
		return nil, ErrUnauthorized
	}
	user := out.Status.User
	g.remember(func() { g.tokens[key] = tokenEntry{user: &user, expires: now.Add(tokenTTL)} })
	return &user, nil
}

// audienceIn: the API server says which of the asked audiences the token
// is for; an API server that ignores audiences says none, and a token
// that is not for the state API is refused.
func audienceIn(auds []string) bool {
	for _, a := range auds {
		if a == probespec.StateAudience {
			return true
		}
	}
	return false
}

func (g *Guard) authorize(ctx context.Context, user *authenticationv1.UserInfo) error {
	key := user.Username + "\x00" + user.UID + "\x00" + strings.Join(user.Groups, "\x00")
	now := g.clock.Now()
	g.mu.Lock()
	v, ok := g.verdicts[key]
	g.mu.Unlock()
	if !ok || !now.Before(v.expires) {
		if !(ok && v.allowed) && !g.reviews.TryAccept() {
			return ErrReviewsBusy
		}
		extra := map[string]authorizationv1.ExtraValue{}
		for k, vs := range user.Extra {
			extra[k] = authorizationv1.ExtraValue(vs)
		}
		out, err := g.client.ReviewAccess(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{User: user.Username, UID: user.UID, Groups: user.Groups, Extra: extra,
				ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Group: probespec.StateGroup,
					Resource: nodeResource, Subresource: probespec.StateNodeSubresource, Name: g.node}}})
		if err != nil {
			return fmt.Errorf("%w: SubjectAccessReview: %v", ErrReviewsFailed, err)
		}
		v = verdict{allowed: out.Status.Allowed && !out.Status.Denied, reason: out.Status.Reason, expires: now.Add(allowTTL)}
		if !v.allowed {
			v.expires = now.Add(denyTTL)
		}
		g.remember(func() { g.verdicts[key] = v })
	}
	if !v.allowed {
		return fmt.Errorf("%w: %s may not get %s/%s %s in %s", ErrForbidden, user.Username,
			nodeResource, probespec.StateNodeSubresource, g.node, probespec.StateGroup)
	}
	return nil
}

// remember runs set under the lock after making room: expired entries go
// first, and a cache still full is emptied. Neither happens under a flood:
// the rate limit lets in reviewRate failures a second, each remembered for
// failTTL, far below maxEntries.
func (g *Guard) remember(set func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.tokens) >= maxEntries || len(g.verdicts) >= maxEntries {
		now := g.clock.Now()
		for k, e := range g.tokens {
			if !now.Before(e.expires) {
				delete(g.tokens, k)
			}
		}
		for k, v := range g.verdicts {
			if !now.Before(v.expires) {
				delete(g.verdicts, k)
			}
		}
		if len(g.tokens) >= maxEntries {
			clear(g.tokens)
		}
		if len(g.verdicts) >= maxEntries {
			clear(g.verdicts)
		}
	}
	set()
}

// GRPC guards a gRPC listener: header is the call's Authorization value;
// the answer is nil or a gRPC status error.
func (g *Guard) GRPC(ctx context.Context, header string) error {
	_, err := g.Allow(ctx, BearerToken(header))
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrNoToken), errors.Is(err, ErrUnauthorized):
		return status.Error(codes.Unauthenticated, err.Error())
	case errors.Is(err, ErrForbidden):
		return status.Error(codes.PermissionDenied, err.Error())
	}
	return status.Error(codes.Unavailable, err.Error())
}
