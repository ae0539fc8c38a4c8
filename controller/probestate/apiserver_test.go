package probestate_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	probes "github.com/probelet/probelet/api/probes/v1alpha1"
	"github.com/probelet/probelet/controller/probestate"
	"github.com/probelet/probelet/controller/webhook/certs"
)

// TestTheServerInstallsTheAPI: the server builds with the API's OpenAPI
// definitions (server-side apply's models need every type) and serves the
// group's one version.
func TestTheServerInstallsTheAPI(t *testing.T) {
	kubeconfig := writeKubeconfig(t)
	srv, err := probestate.NewServer(probestate.ServerOptions{Listen: "127.0.0.1:0", Cert: &certs.Loader{},
		Kubeconfig: kubeconfig, Storage: probestate.NewStorage(nil, nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Destroy()
	if got := srv.ListedPaths(); !contains(got, "/apis/"+probes.SchemeGroupVersion.String()) {
		t.Fatalf("listed paths %v, want /apis/%s", got, probes.SchemeGroupVersion)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// writeKubeconfig is a kubeconfig of an API server that knows nothing:
// delegated authentication finds no front proxy's CA there, which it
// tolerates.
func writeKubeconfig(t *testing.T) string {
	t.Helper()
	api := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(api.Close)
	path := t.TempDir() + "/kubeconfig"
	cfg := `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "` + api.URL + `"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
