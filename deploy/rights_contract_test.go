package deploy_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
)

// wantRules are probelet's rights in the API server, exactly: read pods,
// patch pods/status (the readiness-gate condition), write Events, read
// PodDisruptionBudgets (the kill guard), read namespaces (the probe host
// grant label). Anything
// more is a contract breach (least privilege).
var wantRules = []string{
	"/pods:get,list,watch",
	"/pods/status:patch",
	"/events:create,patch",
	"events.k8s.io/events:create,patch",
	"policy/poddisruptionbudgets:get,list,watch",
	"/namespaces:get,list,watch",
}

// checkRights checks the ClusterRole, its binding to probelet's service
// account and the admission policy that keeps status writes on the node.
func checkRights(objs *objects) error {
	var errs []error
	role := objs.clusterRoles[agentName]
	if role == nil {
		return errors.New("ClusterRole probelet missing")
	}
	var got []string
	for _, r := range role.Rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				got = append(got, g+"/"+res+":"+strings.Join(r.Verbs, ","))
			}
		}
		if len(r.ResourceNames) > 0 || len(r.NonResourceURLs) > 0 {
			errs = append(errs, fmt.Errorf("ClusterRole probelet: unexpected rule %+v", r))
		}
	}
	if !slices.Equal(got, wantRules) {
		errs = append(errs, fmt.Errorf("ClusterRole probelet grants %q, want exactly %q", got, wantRules))
	}
	b := objs.roleBindings[agentName]
	want := rbacv1.Subject{Kind: "ServiceAccount", Name: agentName, Namespace: namespace}
	if b == nil || b.RoleRef.Name != agentName || len(b.Subjects) != 1 || b.Subjects[0] != want {
		errs = append(errs, fmt.Errorf("ClusterRoleBinding probelet must bind the role to %s/%s only: %+v", namespace, agentName, b))
	}
	const policy = "probelet-own-node-pod-status"
	p, pb := objs.policies[policy], objs.policyBindings[policy]
	switch {
	case p == nil || pb == nil:
		errs = append(errs, fmt.Errorf("ValidatingAdmissionPolicy %s and its binding must exist", policy))
	case len(p.Spec.MatchConditions) != 1 ||
		!strings.Contains(p.Spec.MatchConditions[0].Expression, "system:serviceaccount:"+namespace+":"+agentName):
		errs = append(errs, fmt.Errorf("policy %s must match probelet's service account %s/%s", policy, namespace, agentName))
	case !slices.Contains(pb.Spec.ValidationActions, "Deny"):
		errs = append(errs, fmt.Errorf("policy binding %s must Deny", policy))
	}
	return errors.Join(errs...)
}
