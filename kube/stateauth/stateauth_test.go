package stateauth_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/probelet/probelet/kube/kubetest"
	"github.com/probelet/probelet/kube/stateauth"
	"github.com/probelet/probelet/probespec"
)

// apiServer answers reviews as the API server would for a few tokens and
// a few users, and counts them.
type apiServer struct {
	users                       map[string]string // token -> user
	noAudience                  map[string]bool   // tokens authenticated for another audience
	allowed                     map[string]bool   // user -> may get nodes/podprobes
	failReviews                 bool
	tokenReviews, accessReviews int
	lastAccess                  *authorizationv1.SubjectAccessReview
}

func (a *apiServer) client() *fake.Clientset {
	cs := fake.NewClientset()
	cs.PrependReactor("create", "tokenreviews", func(act k8stesting.Action) (bool, runtime.Object, error) {
		a.tokenReviews++
		if a.failReviews {
			return true, nil, errors.New("connection refused")
		}
		tr := act.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview).DeepCopy()
		if user, ok := a.users[tr.Spec.Token]; ok {
			tr.Status.Authenticated = true
			tr.Status.User = authenticationv1.UserInfo{Username: user, Groups: []string{"system:authenticated"}}
			if !a.noAudience[tr.Spec.Token] {
				tr.Status.Audiences = tr.Spec.Audiences
			}
		} else {
			tr.Status.Error = "invalid bearer token"
		}
		return true, tr, nil
	})
	cs.PrependReactor("create", "subjectaccessreviews", func(act k8stesting.Action) (bool, runtime.Object, error) {
		a.accessReviews++
		if a.failReviews {
			return true, nil, errors.New("connection refused")
		}
		sar := act.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview).DeepCopy()
		a.lastAccess = sar
		sar.Status.Allowed = a.allowed[sar.Spec.User]
		return true, sar, nil
	})
	return cs
}

func newAPIServer() *apiServer {
	return &apiServer{
		users:      map[string]string{"ctrl": "system:serviceaccount:probelet-system:probelet-controller", "tenant": "system:serviceaccount:a:default", "other-aud": "system:serviceaccount:probelet-system:probelet-controller"},
		noAudience: map[string]bool{"other-aud": true},
		allowed:    map[string]bool{"system:serviceaccount:probelet-system:probelet-controller": true},
	}
}

func TestAllow(t *testing.T) {
	for _, tc := range []struct {
		name, token string
		fail        bool
		want        error
		wantUser    string
	}{
		{name: "the controller's token", token: "ctrl", wantUser: "system:serviceaccount:probelet-system:probelet-controller"},
		{name: "no token", token: "", want: stateauth.ErrNoToken},
		{name: "a made-up token", token: "guess", want: stateauth.ErrUnauthorized},
		{name: "a token for the API server, not the state audience", token: "other-aud", want: stateauth.ErrUnauthorized},
		{name: "a tenant's own token for the state audience", token: "tenant", want: stateauth.ErrForbidden, wantUser: "system:serviceaccount:a:default"},
		{name: "the API server away", token: "ctrl", fail: true, want: stateauth.ErrReviewsFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			api := newAPIServer()
			api.failReviews = tc.fail
			g := stateauth.New(kubetest.Client(api.client()), "node-1", nil)
			user, err := g.Allow(context.Background(), tc.token)
			if !errors.Is(err, tc.want) || user != tc.wantUser {
				t.Fatalf("Allow(%q) = %q, %v; want %q, %v", tc.token, user, err, tc.wantUser, tc.want)
			}
		})
	}
}

// TestTheReviewAsksForThisNodesProbeState: RBAC is asked exactly about
// get nodes/podprobes of this node in the state group.
func TestTheReviewAsksForThisNodesProbeState(t *testing.T) {
	api := newAPIServer()
	g := stateauth.New(kubetest.Client(api.client()), "node-1", nil)
	if _, err := g.Allow(context.Background(), "ctrl"); err != nil {
		t.Fatal(err)
	}
	got := *api.lastAccess.Spec.ResourceAttributes
	want := authorizationv1.ResourceAttributes{Verb: "get", Group: probespec.StateGroup, Resource: "nodes", Subresource: "podprobes", Name: "node-1"}
	if got != want {
		t.Fatalf("SubjectAccessReview asked %+v, want %+v", got, want)
	}
	_, err := stateauth.New(kubetest.Client(api.client()), "node-1", nil).Allow(context.Background(), "tenant")
	if err == nil || !errors.Is(err, stateauth.ErrForbidden) || !strings.Contains(err.Error(), "node-1") || !strings.Contains(err.Error(), "system:serviceaccount:a:default") {
		t.Fatalf("a tenant's refusal: %v, want Forbidden naming the user and the node", err)
	}
}

// TestAnswersAreCachedForTheKubeletsTimes: a good token is reviewed once
// per 2 minutes and its access once per 5; a refused user once per 30 s.
func TestAnswersAreCachedForTheKubeletsTimes(t *testing.T) {
	api := newAPIServer()
	clk := clocktesting.NewFakePassiveClock(time.Unix(1_000_000, 0))
	g := stateauth.New(kubetest.Client(api.client()), "node-1", clk)
	ctx := context.Background()
	steps := []struct {
		advance        time.Duration
		token          string
		tokens, access int
	}{
		{0, "ctrl", 1, 1},
		{time.Minute, "ctrl", 1, 1},
		{61 * time.Second, "ctrl", 2, 1}, // the token's 2 minutes are up
		{3 * time.Minute, "ctrl", 3, 2},  // and the access's 5
		{0, "tenant", 4, 3},
		{20 * time.Second, "tenant", 4, 3},
		{11 * time.Second, "tenant", 4, 4}, // a refusal is asked again after 30 s
	}
	for i, s := range steps {
		clk.SetTime(clk.Now().Add(s.advance))
		_, _ = g.Allow(ctx, s.token)
		if api.tokenReviews != s.tokens || api.accessReviews != s.access {
			t.Fatalf("step %d (%s): %d token reviews, %d access reviews; want %d, %d", i, s.token, api.tokenReviews, api.accessReviews, s.tokens, s.access)
		}
	}
}

// TestAFloodOfMadeUpTokensIsRateLimitedAndKeepsNoOneOut: a pod sending a
// thousand made-up tokens costs the API server the burst, not a thousand
// reviews, and the controller's token, once good, is reviewed again past
// the limit when its cache time is up.
func TestAFloodOfMadeUpTokensIsRateLimitedAndKeepsNoOneOut(t *testing.T) {
	api := newAPIServer()
	clk := clocktesting.NewFakePassiveClock(time.Unix(1_000_000, 0))
	g := stateauth.New(kubetest.Client(api.client()), "node-1", clk)
	ctx := context.Background()
	if _, err := g.Allow(ctx, "ctrl"); err != nil {
		t.Fatal(err)
	}
	busy := 0
	for i := range 1000 {
		if _, err := g.Allow(ctx, fmt.Sprintf("guess-%d", i)); errors.Is(err, stateauth.ErrReviewsBusy) {
			busy++
		}
	}
	if api.tokenReviews > 12 || busy < 980 {
		t.Fatalf("a flood of 1000 made-up tokens: %d token reviews, %d refused as busy; want at most the burst", api.tokenReviews, busy)
	}
	clk.SetTime(clk.Now().Add(3 * time.Minute))
	for i := range 1000 {
		_, _ = g.Allow(ctx, fmt.Sprintf("again-%d", i))
	}
	if _, err := g.Allow(ctx, "ctrl"); err != nil {
		t.Fatalf("the controller's token after its cache time, inside a flood: %v", err)
	}
}
