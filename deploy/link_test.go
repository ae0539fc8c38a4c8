package deploy_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestImageBinariesKeepDeadCodeElimination builds the agent with the
// image's build tags (hack/image/build.sh; the Dockerfile and the Makefile
// are held to the same by TestDockerfile and TestMakefileBuildTags) and
// checks that the linker could still drop unused exported methods. One
// reachable call of reflect's Method or MethodByName with a name not known
// at link time (text/template's and html/template's execution; grpc-go's
// x/net/trace reached them until grpcnotrace) makes it keep every exported
// method of every type in an interface: the agent was 7 MiB larger on disk
// and in resident memory. The sign looked for: the generated getters of
// probelet's own API messages, nearly all unused by the agent, are linked.
func TestImageBinariesKeepDeadCodeElimination(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the agent")
	}
	tags := imageBuildTags(t)
	bin := filepath.Join(t.TempDir(), "probelet")
	// Symbols kept (no -s -w) so nm can read them; the rest is the image's.
	build := exec.Command("go", "build", "-trimpath", "-tags", tags, "-o", bin, "./cmd/probelet")
	build.Dir = repoRoot
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -tags %q ./cmd/probelet: %v\n%s", tags, err, out)
	}
	out, err := exec.Command("go", "tool", "nm", bin).Output()
	if err != nil {
		t.Fatalf("go tool nm: %v", err)
	}
	getter := regexp.MustCompile(`(?m) T github\.com/probelet/probelet/api/v1alpha1\.\(\*\w+\)\.Get\w+$`)
	if n := len(getter.FindAllIndex(out, -1)); n > 20 {
		t.Errorf("the agent links %d getters of api/v1alpha1's messages: dead code elimination of exported "+
			"methods is off (a reachable reflect.Value.Method or MethodByName call with a name computed at run time: "+
			"find it with go build -ldflags=-dumpdep ./cmd/probelet | grep -e '-> reflect.Value.Method')", n)
	}
}

// TestMakefileBuildTags checks that `make build` uses the image's build tags.
func TestMakefileBuildTags(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^BUILDTAGS\s*:?=\s*(.*)$`).FindSubmatch(b)
	if m == nil {
		t.Fatal("the Makefile sets no BUILDTAGS")
	}
	if got, want := strings.TrimSpace(string(m[1])), imageBuildTags(t); got != want {
		t.Errorf("Makefile BUILDTAGS %q, want hack/image/build.sh's %q", got, want)
	}
}

// imageBuildTags are the -tags of hack/image/build.sh's go build.
func imageBuildTags(t *testing.T) string {
	t.Helper()
	m := regexp.MustCompile(`-tags (\S+)`).FindStringSubmatch(imageBuildFlags(t))
	if m == nil {
		t.Fatalf("%s builds without -tags", imageBuilder)
	}
	return m[1]
}
