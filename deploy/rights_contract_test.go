package deploy_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// wantRules are probelet's rights in the API server, exactly: read pods,
// patch pods/status (the readiness-gate condition), write Events, read
// PodDisruptionBudgets (the kill guard), read namespaces (the probe host
// grant label), get a Node (its Lease's owner). Anything more is a
// contract breach (least privilege).
var wantRules = []string{
	"/pods:get,list,watch",
	"/pods/status:patch",
	"/events:create,patch",
	"events.k8s.io/events:create,patch",
	"policy/poddisruptionbudgets:get,list,watch",
	"/namespaces:get,list,watch",
	"/nodes:get",
	"authentication.k8s.io/tokenreviews:create",
	"authorization.k8s.io/subjectaccessreviews:create",
}

// wantLeaseRules are probelet's rights in its own namespace, exactly: its
// node Lease (the heartbeat, issue 20), read, created and renewed; never
// deleted, listed or watched.
var wantLeaseRules = []string{"coordination.k8s.io/leases:get,create,update"}

// leaseRole names the Role and RoleBinding of the node Lease.
const leaseRole = "probelet-lease"

// checkRights checks the ClusterRole, its binding to probelet's service
// account and the admission policy that keeps status writes on the node.
func checkRights(objs *objects) error {
	var errs []error
	role := objs.clusterRoles[agentName]
	if role == nil {
		return errors.New("ClusterRole probelet missing")
	}
	got, err := grants("ClusterRole probelet", role.Rules)
	errs = append(errs, err)
	if !slices.Equal(got, wantRules) {
		errs = append(errs, fmt.Errorf("ClusterRole probelet grants %q, want exactly %q", got, wantRules))
	}
	errs = append(errs, checkLeaseRights(objs))
	b := objs.roleBindings[agentName]
	want := rbacv1.Subject{Kind: "ServiceAccount", Name: agentName, Namespace: namespace}
	if b == nil || b.RoleRef.Name != agentName || len(b.Subjects) != 1 || b.Subjects[0] != want {
		errs = append(errs, fmt.Errorf("ClusterRoleBinding probelet must bind the role to %s/%s only: %+v", namespace, agentName, b))
	}
	p, err := agentPolicy(objs, "probelet-own-node-pod-status")
	if err != nil {
		errs = append(errs, err)
	} else {
		errs = append(errs, checkPolicyGuards(p)...)
	}
	return errors.Join(errs...)
}

// policyGuards are what the status policy must check, each as the CEL
// that checks it; the cluster e2e (TestClusterRights) proves their
// meaning against a real API server, this keeps any of them from being
// dropped unnoticed.
var policyGuards = []struct{ what, cel string }{
	{"write only pods on the token's node", "object.spec.nodeName in variables.nodeNames"},
	{"leave every other condition as it was", "variables.otherConditions == variables.oldOtherConditions"},
	{"leave every other status field as it was (IPs, phase, container statuses)",
		"variables.status.all(k, k == 'conditions' || (k in variables.oldStatus && variables.status[k] == variables.oldStatus[k]))"},
	{"remove no status field", "variables.oldStatus.all(k, k == 'conditions' || k in variables.status)"},
	{"leave the metadata as it was (labels, annotations, finalizers)",
		"object.metadata.all(k, k in variables.serverMetadata || (k in oldObject.metadata && object.metadata[k] == oldObject.metadata[k]))"},
	{"remove no metadata field", "oldObject.metadata.all(k, k in variables.serverMetadata || k in object.metadata)"},
}

// policyVariables are the variables the guards rely on, exactly.
var policyVariables = map[string]string{
	"status":             "has(object.status) ? object.status : {}",
	"oldStatus":          "has(oldObject.status) ? oldObject.status : {}",
	"otherConditions":    "'conditions' in variables.status ? variables.status.conditions.filter(c, c.type != 'probelet.io/ready') : []",
	"oldOtherConditions": "'conditions' in variables.oldStatus ? variables.oldStatus.conditions.filter(c, c.type != 'probelet.io/ready') : []",
	"serverMetadata":     "['resourceVersion', 'managedFields']",
}

// checkPolicyGuards checks that the status policy lets probelet change
// the probelet.io/ready condition of its node's pods and nothing else.
func checkPolicyGuards(p *admissionregistrationv1.ValidatingAdmissionPolicy) []error {
	return checkGuards(p, policyGuards, policyVariables)
}

// checkGuards checks that every guard's CEL is in the policy's
// validations, its variables are vars exactly, and it fails closed.
func checkGuards(p *admissionregistrationv1.ValidatingAdmissionPolicy, guards []struct{ what, cel string }, vars map[string]string) []error {
	var errs []error
	var exprs []string
	for _, v := range p.Spec.Validations {
		exprs = append(exprs, strings.Join(strings.Fields(v.Expression), " "))
	}
	all := strings.Join(exprs, " && ")
	for _, g := range guards {
		if !strings.Contains(all, g.cel) {
			errs = append(errs, fmt.Errorf("policy %s must %s: no validation checks %s", p.Name, g.what, g.cel))
		}
	}
	got := map[string]string{}
	for _, v := range p.Spec.Variables {
		got[v.Name] = v.Expression
	}
	for name, want := range vars {
		if got := got[name]; got != want {
			errs = append(errs, fmt.Errorf("policy %s: variable %s is %q, want %q", p.Name, name, got, want))
		}
	}
	if p.Spec.FailurePolicy == nil || *p.Spec.FailurePolicy != admissionregistrationv1.Fail {
		errs = append(errs, fmt.Errorf("policy %s must fail closed (failurePolicy: Fail)", p.Name))
	}
	return errs
}

// grants flattens rules to "group/resource:verbs"; resource names and
// non-resource URLs are errors.
func grants(what string, rules []rbacv1.PolicyRule) ([]string, error) {
	var got []string
	var errs []error
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				got = append(got, g+"/"+res+":"+strings.Join(r.Verbs, ","))
			}
		}
		if len(r.ResourceNames) > 0 || len(r.NonResourceURLs) > 0 {
			errs = append(errs, fmt.Errorf("%s: unexpected rule %+v", what, r))
		}
	}
	return got, errors.Join(errs...)
}

// checkLeaseRights checks the node Lease's Role in probelet's namespace
// only, its binding to probelet's service account, and the admission
// policy that keeps each probelet to its own node's Lease.
func checkLeaseRights(objs *objects) error {
	var errs []error
	key := namespace + "/" + leaseRole
	role, b := objs.nsRoles[key], objs.nsRoleBindings[key]
	if role == nil || b == nil {
		return fmt.Errorf("Role and RoleBinding %s must exist (the node Lease)", key)
	}
	want := rbacv1.Subject{Kind: "ServiceAccount", Name: agentName, Namespace: namespace}
	// Other Roles (the controller's, in a rendering with both) may exist;
	// none but the Lease's may be bound to probelet.
	for id, other := range objs.nsRoleBindings {
		if id != key && slices.Contains(other.Subjects, want) {
			errs = append(errs, fmt.Errorf("RoleBinding %s binds probelet; only %s may", id, key))
		}
	}
	got, err := grants("Role "+key, role.Rules)
	errs = append(errs, err)
	if !slices.Equal(got, wantLeaseRules) {
		errs = append(errs, fmt.Errorf("Role %s grants %q, want exactly %q", key, got, wantLeaseRules))
	}
	if b.RoleRef.Kind != "Role" || b.RoleRef.Name != leaseRole || len(b.Subjects) != 1 || b.Subjects[0] != want {
		errs = append(errs, fmt.Errorf("RoleBinding %s must bind the Role to %s/%s only: %+v", key, namespace, agentName, b))
	}
	p, err := agentPolicy(objs, "probelet-own-node-lease")
	switch {
	case err != nil:
		errs = append(errs, err)
	case !slices.ContainsFunc(p.Spec.Validations, func(v admissionregistrationv1.Validation) bool {
		return strings.Contains(v.Expression, "object.metadata.name in variables.nodeNames")
	}):
		errs = append(errs, fmt.Errorf("policy %s must keep the Lease's name to the token's node", p.Name))
	}
	errs = append(errs, checkLeaseWriters(objs))
	return errors.Join(errs...)
}

// checkLeaseWriters checks the policy that keeps everyone but probelet and
// probelet-controller (its election Lease) from writing a Lease in
// probelet's namespace, so no other identity can keep a node's heartbeat
// alive.
func checkLeaseWriters(objs *objects) error {
	const name = "probelet-lease-writers"
	p, pb := objs.policies[name], objs.policyBindings[name]
	switch {
	case p == nil || pb == nil:
		return fmt.Errorf("ValidatingAdmissionPolicy %s and its binding must exist", name)
	case !slices.Contains(pb.Spec.ValidationActions, "Deny"):
		return fmt.Errorf("policy binding %s must Deny", name)
	case p.Spec.FailurePolicy == nil || *p.Spec.FailurePolicy != admissionregistrationv1.Fail:
		return fmt.Errorf("policy %s must fail closed", name)
	case len(p.Spec.MatchConditions) != 1 || p.Spec.MatchConditions[0].Expression != "request.namespace == '"+namespace+"'":
		return fmt.Errorf("policy %s must match every request in %s, whoever makes it", name, namespace)
	case len(p.Spec.Validations) != 1:
		return fmt.Errorf("policy %s must have one validation, the writers it allows", name)
	}
	want := "request.userInfo.username == 'system:serviceaccount:" + namespace + ":" + agentName + "' || " +
		"(request.userInfo.username == 'system:serviceaccount:" + namespace + ":probelet-controller' && " +
		"object.metadata.name == 'probelet-controller')"
	if got := strings.TrimSpace(p.Spec.Validations[0].Expression); got != want {
		return fmt.Errorf("policy %s allows %q, want exactly probelet and probelet-controller's election Lease: %q", name, got, want)
	}
	return nil
}

// agentPolicy is the ValidatingAdmissionPolicy name, checked to exist with
// its binding, to match probelet's service account and to Deny.
func agentPolicy(objs *objects, name string) (*admissionregistrationv1.ValidatingAdmissionPolicy, error) {
	return accountPolicy(objs, name, agentName)
}

// accountPolicy is agentPolicy for the service account named account.
func accountPolicy(objs *objects, name, account string) (*admissionregistrationv1.ValidatingAdmissionPolicy, error) {
	p, pb := objs.policies[name], objs.policyBindings[name]
	switch {
	case p == nil || pb == nil:
		return nil, fmt.Errorf("ValidatingAdmissionPolicy %s and its binding must exist", name)
	case len(p.Spec.MatchConditions) != 1 ||
		!strings.Contains(p.Spec.MatchConditions[0].Expression, "'system:serviceaccount:"+namespace+":"+account+"'"):
		return nil, fmt.Errorf("policy %s must match the service account %s/%s", name, namespace, account)
	case !slices.Contains(pb.Spec.ValidationActions, "Deny"):
		return nil, fmt.Errorf("policy binding %s must Deny", name)
	}
	return p, nil
}
