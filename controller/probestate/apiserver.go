package probestate

import (
	"errors"
	"fmt"
	"net"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/component-base/compatibility"

	"github.com/probelet/probelet/api/probes/openapi"
	probes "github.com/probelet/probelet/api/probes/v1alpha1"
)

// ServerOptions configure the aggregated API server.
type ServerOptions struct {
	// Listen is HOST:PORT (HOST empty: every address).
	Listen string
	// Cert is the serving certificate, kept current by its provider.
	Cert dynamiccertificates.CertKeyContentProvider
	// Kubeconfig reaches the API server for delegated authentication and
	// authorisation (TokenReview, SubjectAccessReview, the front proxy's
	// CA in kube-system's extension-apiserver-authentication ConfigMap);
	// empty: the in-cluster configuration.
	Kubeconfig string
	Storage    *Storage
}

// NewScheme registers the API's types for serving: v1alpha1, and the same
// Go types as the internal version, which has no form of its own (one
// version, read-only: nothing to convert).
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := probes.AddToScheme(s); err != nil {
		panic(err) // registering fixed types cannot fail
	}
	s.AddKnownTypes(schema.GroupVersion{Group: probes.GroupName, Version: runtime.APIVersionInternal}, &probes.PodProbes{}, &probes.PodProbesList{})
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	s.AddUnversionedTypes(schema.GroupVersion{Version: "v1"}, &metav1.Status{}, &metav1.APIVersions{}, &metav1.APIGroupList{},
		&metav1.APIGroup{}, &metav1.APIResourceList{})
	return s
}

// NewServer builds the API server: the podprobes resource of
// probes.probelet.io/v1alpha1 behind delegated authentication and
// authorisation, as metrics-server serves metrics.k8s.io.
func NewServer(o ServerOptions) (*genericapiserver.GenericAPIServer, error) {
	if o.Cert == nil || o.Storage == nil {
		return nil, errors.New("probestate: a serving certificate and the storage are required")
	}
	host, _, err := net.SplitHostPort(o.Listen)
	if err != nil {
		return nil, fmt.Errorf("the listen address %q: %w", o.Listen, err)
	}
	scheme := NewScheme()
	codecs := serializer.NewCodecFactory(scheme)
	cfg := genericapiserver.NewConfig(codecs)
	cfg.EffectiveVersion = compatibility.NewEffectiveVersionFromString("", "", "") // the build's: one version, gated by nothing
	cfg.EnableProfiling = false
	namer := openapinamer.NewDefinitionNamer(scheme)
	cfg.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(openapi.GetOpenAPIDefinitions, namer)
	cfg.OpenAPIConfig.Info.Title, cfg.OpenAPIConfig.Info.Version = "probelet probe state", probes.SchemeGroupVersion.Version
	cfg.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(openapi.GetOpenAPIDefinitions, namer)
	cfg.OpenAPIV3Config.Info.Title, cfg.OpenAPIV3Config.Info.Version = "probelet probe state", probes.SchemeGroupVersion.Version

	// WithLoopback: the server's own clients (its post-start hooks) reach
	// it with a certificate of its own.
	secure := genericoptions.NewSecureServingOptions().WithLoopback()
	// The listener is made here, so that a port of 0 (tests) is one.
	lis, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return nil, err
	}
	secure.Listener, secure.BindAddress = lis, net.ParseIP(host)
	secure.BindPort = lis.Addr().(*net.TCPAddr).Port
	secure.ServerCert.CertDirectory, secure.ServerCert.PairName = "", ""
	if err := secure.ApplyTo(&cfg.SecureServing, &cfg.LoopbackClientConfig); err != nil {
		return nil, fmt.Errorf("serving: %w", err)
	}
	cfg.SecureServing.Cert = o.Cert

	authn := genericoptions.NewDelegatingAuthenticationOptions()
	authn.RemoteKubeConfigFile = o.Kubeconfig
	if err := authn.ApplyTo(&cfg.Authentication, cfg.SecureServing, nil); err != nil {
		return nil, fmt.Errorf("delegated authentication: %w", err)
	}
	authz := genericoptions.NewDelegatingAuthorizationOptions()
	authz.RemoteKubeConfigFile = o.Kubeconfig
	if err := authz.ApplyTo(&cfg.Authorization); err != nil {
		return nil, fmt.Errorf("delegated authorisation: %w", err)
	}

	srv, err := cfg.Complete(nil).New("probelet-probe-state", genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, err
	}
	info := genericapiserver.NewDefaultAPIGroupInfo(probes.GroupName, scheme, metav1.ParameterCodec, codecs)
	info.VersionedResourcesStorageMap[probes.SchemeGroupVersion.Version] = map[string]rest.Storage{probes.Resource.Resource: o.Storage}
	if err := srv.InstallAPIGroup(&info); err != nil {
		return nil, err
	}
	return srv, nil
}
