package deploy_test

import (
	"errors"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// strict decodes into the k8s.io/api types the way the API server's strict
// field validation does: unknown and duplicate fields are errors.
var strict = func() runtime.Decoder {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, rbacv1.AddToScheme, admissionregistrationv1.AddToScheme, policyv1.AddToScheme, apiregistrationv1.AddToScheme} {
		if err := add(scheme); err != nil {
			panic(err)
		}
	}
	return serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
}()

// objects are a rendering's typed objects, by name.
type objects struct {
	daemonSets      map[string]*appsv1.DaemonSet
	deployments     map[string]*appsv1.Deployment
	budgets         map[string]*policyv1.PodDisruptionBudget
	namespaces      map[string]*corev1.Namespace
	serviceAccounts map[string]*corev1.ServiceAccount
	configMaps      map[string]*corev1.ConfigMap
	clusterRoles    map[string]*rbacv1.ClusterRole
	roleBindings    map[string]*rbacv1.ClusterRoleBinding
	nsRoles         map[string]*rbacv1.Role        // by namespace/name
	nsRoleBindings  map[string]*rbacv1.RoleBinding // by namespace/name
	policies        map[string]*admissionregistrationv1.ValidatingAdmissionPolicy
	policyBindings  map[string]*admissionregistrationv1.ValidatingAdmissionPolicyBinding
	services        map[string]*corev1.Service
	webhooks        map[string]*admissionregistrationv1.MutatingWebhookConfiguration
	apiServices     map[string]*apiregistrationv1.APIService
}

// load builds dir, checks every object against the schemas and decodes it
// strictly. Any violation is an error naming the object.
func load(fsys filesys.FileSystem, dir string) (*objects, error) {
	objs, err := build(fsys, dir)
	if err != nil {
		return nil, err
	}
	return decodeAll(objs)
}

// decodeAll checks every object of a rendering (kustomize's or Helm's)
// against the schemas and decodes it strictly.
func decodeAll(objs []rendered) (*objects, error) {
	api, err := kubeOpenAPI()
	if err != nil {
		return nil, err
	}
	out := &objects{
		daemonSets:      map[string]*appsv1.DaemonSet{},
		deployments:     map[string]*appsv1.Deployment{},
		budgets:         map[string]*policyv1.PodDisruptionBudget{},
		namespaces:      map[string]*corev1.Namespace{},
		serviceAccounts: map[string]*corev1.ServiceAccount{},
		configMaps:      map[string]*corev1.ConfigMap{},
		clusterRoles:    map[string]*rbacv1.ClusterRole{},
		roleBindings:    map[string]*rbacv1.ClusterRoleBinding{},
		nsRoles:         map[string]*rbacv1.Role{},
		nsRoleBindings:  map[string]*rbacv1.RoleBinding{},
		policies:        map[string]*admissionregistrationv1.ValidatingAdmissionPolicy{},
		policyBindings:  map[string]*admissionregistrationv1.ValidatingAdmissionPolicyBinding{},
		services:        map[string]*corev1.Service{},
		webhooks:        map[string]*admissionregistrationv1.MutatingWebhookConfiguration{},
		apiServices:     map[string]*apiregistrationv1.APIService{},
	}
	var errs []error
	for _, o := range objs {
		if err := api.validate(o); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", o.id, err))
		}
		if err := out.add(o); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", o.id, err))
		}
	}
	return out, errors.Join(errs...)
}

// add decodes o strictly and files it by kind.
func (s *objects) add(o rendered) error {
	obj, _, err := strict.Decode(o.json, nil, nil)
	if err != nil {
		return fmt.Errorf("strict decode: %w", err)
	}
	switch v := obj.(type) {
	case *appsv1.DaemonSet:
		s.daemonSets[v.Name] = v
	case *appsv1.Deployment:
		s.deployments[v.Name] = v
	case *policyv1.PodDisruptionBudget:
		s.budgets[v.Name] = v
	case *corev1.Namespace:
		s.namespaces[v.Name] = v
	case *corev1.ServiceAccount:
		s.serviceAccounts[v.Name] = v
	case *corev1.ConfigMap:
		s.configMaps[v.Name] = v
	case *rbacv1.ClusterRole:
		s.clusterRoles[v.Name] = v
	case *rbacv1.ClusterRoleBinding:
		s.roleBindings[v.Name] = v
	case *rbacv1.Role:
		s.nsRoles[v.Namespace+"/"+v.Name] = v
	case *rbacv1.RoleBinding:
		s.nsRoleBindings[v.Namespace+"/"+v.Name] = v
	case *admissionregistrationv1.ValidatingAdmissionPolicy:
		s.policies[v.Name] = v
	case *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
		s.policyBindings[v.Name] = v
	case *corev1.Service:
		s.services[v.Name] = v
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		s.webhooks[v.Name] = v
	case *apiregistrationv1.APIService:
		s.apiServices[v.Name] = v
	default:
		return fmt.Errorf("unexpected kind %T", obj)
	}
	return nil
}
