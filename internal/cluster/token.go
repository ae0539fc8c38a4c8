package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// ServiceAccountConfig returns a client configuration that authenticates
// as the ServiceAccount namespace/name with a bound token from the
// TokenRequest API, valid for ttl (the API server raises it to at least 10
// minutes). The ServiceAccount must exist; it has the rights RBAC gives it.
func (c *Cluster) ServiceAccountConfig(ctx context.Context, namespace, name string, ttl time.Duration) (*rest.Config, error) {
	token, err := c.serviceAccountToken(ctx, namespace, name, ttl, nil)
	if err != nil {
		return nil, err
	}
	cfg := rest.AnonymousClientConfig(c.restCfg) // keeps the server and its CA, drops the admin cert
	cfg.BearerToken = token
	return cfg, nil
}

// ServiceAccountKubeconfig writes a kubeconfig for the ServiceAccount
// namespace/name (see ServiceAccountConfig) into the cluster directory and
// returns its path, for KubectlAs or a program under test.
func (c *Cluster) ServiceAccountKubeconfig(ctx context.Context, namespace, name string, ttl time.Duration) (string, error) {
	return c.ServiceAccountKubeconfigBound(ctx, namespace, name, ttl, nil)
}

// ServiceAccountKubeconfigBound is ServiceAccountKubeconfig with the token
// bound to an object (a Pod or a Node), as a DaemonSet pod's projected
// token is: the API server then puts the node's name in the token's user
// extra (authentication.kubernetes.io/node-name).
func (c *Cluster) ServiceAccountKubeconfigBound(ctx context.Context, namespace, name string, ttl time.Duration, bound *authenticationv1.BoundObjectReference) (string, error) {
	token, err := c.serviceAccountToken(ctx, namespace, name, ttl, bound)
	if err != nil {
		return "", err
	}
	file := namespace + "." + name
	if bound != nil {
		file += "." + strings.ToLower(bound.Kind) + "-" + bound.Name
	}
	path := filepath.Join(c.Dir(), "sa", file+".kubeconfig")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", err
	}
	user := "system:serviceaccount:" + namespace + ":" + name
	if err := clientcmd.WriteToFile(*tokenKubeconfig(c.url, c.CAFile(), user, token), path); err != nil {
		return "", err
	}
	return path, nil
}

func (c *Cluster) serviceAccountToken(ctx context.Context, namespace, name string, ttl time.Duration, bound *authenticationv1.BoundObjectReference) (string, error) {
	secs := int64(ttl / time.Second)
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &secs, BoundObjectRef: bound}}
	resp, err := c.client.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, req, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("cluster: token for serviceaccount %s/%s: %w", namespace, name, err)
	}
	return resp.Status.Token, nil
}

// tokenKubeconfig is a kubeconfig with one cluster, one token user and a
// current context joining them.
func tokenKubeconfig(server, caFile, user, token string) *clientcmdapi.Config {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["probelet"] = &clientcmdapi.Cluster{Server: server, CertificateAuthority: caFile}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["probelet"] = &clientcmdapi.Context{Cluster: "probelet", AuthInfo: user}
	cfg.CurrentContext = "probelet"
	return cfg
}
