package architecture_test

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/probelet/probelet"

// rooms are ARCHITECTURE.md's rooms and what each may import of the
// module besides itself: path prefixes, a room's own packages always
// allowed. A package is in the room of its longest prefix. A new room, or a
// new arrow, is a change to this table and to ARCHITECTURE.md together.
var rooms = []struct {
	room   string
	mayUse []string
}{
	{"node", nil},
	{"api", []string{"probespec", "node"}},
	{"probespec", []string{"node"}},
	{"quietio", nil},
	{"podnet", nil},
	{"internal", []string{"quietio"}},
	{"internal/testbed", []string{"internal", "probespec"}},
	{"internal/cluster", []string{"internal"}},
	{"prober", []string{"node", "probespec", "quietio", "podnet", "internal"}},
	{"lifecycle", []string{"node", "internal"}},
	{"plugin", []string{"lifecycle", "node", "internal"}},
	{"cri/client", []string{"lifecycle", "node", "prober/probe/execprobe", "quietio", "internal"}},
	{"cri/proxy", []string{"directexec", "prober/probe/execprobe", "internal"}},
	{"cri/server", []string{"api", "lifecycle", "node", "prober", "probespec", "internal"}},
	{"directexec", []string{"prober/probe/execprobe", "internal"}},
	{"ebpf", []string{"prober/probe", "internal"}},
	{"killer", []string{"prober", "node", "internal"}},
	{"killguard", []string{"prober", "internal"}},
	{"history", []string{"prober", "internal"}},
	{"kube", []string{"node", "prober", "probespec", "internal"}},
	{"controller", []string{"api", "probespec", "internal"}},
	{"deploy", []string{"internal"}},
	{"cmd/probectl", []string{"api", "internal"}},
	{"cmd/probelet-nri-install", []string{"deploy"}},
	{"cmd/probelet-controller", []string{"controller", "api", "probespec", "internal"}},
	{"cmd/probelet/criproxy", []string{"cri/proxy", "directexec", "quietio", "internal"}},
	{"cmd/probelet", []string{"node", "probespec", "quietio", "podnet", "internal", "prober", "lifecycle", "plugin",
		"cri/client", "cri/server", "directexec", "ebpf", "killer", "killguard", "history", "kube", "cmd/probelet/criproxy"}},
}

// exempt are the test suites and tools, which may use any room.
var exempt = []string{"e2e", "hack"}

type pkg struct {
	ImportPath string
	Name       string
	Dir        string
	GoFiles    []string
	Imports    []string
}

// packages lists the module's packages (go list), by path inside it.
func packages(t *testing.T) map[string]pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-e", "-json", module+"/...")
	cmd.Dir = root(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string]pkg{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs[inModule(p.ImportPath)] = p
	}
	return pkgs
}

func root(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func inModule(path string) string {
	return strings.TrimPrefix(strings.TrimPrefix(path, module), "/")
}

// under reports whether path is prefix or below it.
func under(path, prefix string) bool {
	return path == prefix || strings.HasPrefix(path, prefix+"/")
}

// roomOf is the room of path ("" for none).
func roomOf(path string) string {
	best := ""
	for _, r := range rooms {
		if under(path, r.room) && len(r.room) > len(best) {
			best = r.room
		}
	}
	return best
}

func isExempt(path string) bool {
	return slices.ContainsFunc(exempt, func(e string) bool { return under(path, e) })
}

// TestEveryImportIsARoomsOwnOrAllowed: each package imports only its own
// room and what the table lets its room use.
func TestEveryImportIsARoomsOwnOrAllowed(t *testing.T) {
	for path, p := range packages(t) {
		if isExempt(path) {
			continue
		}
		room := roomOf(path)
		if room == "" {
			t.Errorf("%s is in no room: add it to the table here and to ARCHITECTURE.md", path)
			continue
		}
		var allowed []string
		for _, r := range rooms {
			if r.room == room {
				allowed = r.mayUse
			}
		}
		for _, imp := range p.Imports {
			if !strings.HasPrefix(imp, module+"/") {
				continue
			}
			imp = inModule(imp)
			if roomOf(imp) == room || slices.ContainsFunc(allowed, func(a string) bool { return under(imp, a) }) {
				continue
			}
			t.Errorf("%s (room %s) imports %s (room %s), which the room may not use", path, room, imp, roomOf(imp))
		}
	}
}

// TestImportsPointDown: the rooms' imports, as they are, form no cycle.
func TestImportsPointDown(t *testing.T) {
	uses := map[string]map[string]bool{}
	for path, p := range packages(t) {
		from := roomOf(path)
		if isExempt(path) || from == "" {
			continue
		}
		for _, imp := range p.Imports {
			if to := roomOf(inModule(imp)); strings.HasPrefix(imp, module+"/") && to != from {
				if uses[from] == nil {
					uses[from] = map[string]bool{}
				}
				uses[from][to] = true
			}
		}
	}
	// Depth-first: a room met again while on the path closes a cycle.
	const (
		unseen = iota
		onPath
		done
	)
	state := map[string]int{}
	var path []string
	var visit func(r string)
	visit = func(r string) {
		switch state[r] {
		case onPath:
			i := slices.Index(path, r)
			t.Errorf("rooms import one another in a cycle: %s", strings.Join(append(path[i:], r), " → "))
			return
		case done:
			return
		}
		state[r] = onPath
		path = append(path, r)
		for to := range uses[r] {
			visit(to)
		}
		path = path[:len(path)-1]
		state[r] = done
	}
	for r := range uses {
		visit(r)
	}
}

// TestTheControllerLinksNothingOfTheAgent: probelet-controller's binary,
// with everything it links, holds no package of the node agent's rooms.
func TestTheControllerLinksNothingOfTheAgent(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", module+"/cmd/probelet-controller")
	cmd.Dir = root(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	agent := []string{"prober", "lifecycle", "plugin", "cri", "kube", "killer", "killguard", "history", "ebpf", "directexec", "quietio", "podnet", "cmd/probelet"}
	for _, dep := range strings.Fields(string(out)) {
		if !strings.HasPrefix(dep, module+"/") {
			continue
		}
		dep = inModule(dep)
		if slices.ContainsFunc(agent, func(a string) bool { return under(dep, a) }) && !under(dep, "cmd/probelet-controller") {
			t.Errorf("probelet-controller links %s, a room of the node agent", dep)
		}
	}
}

// names is the one file that defines the names probelet writes into the
// cluster; formatTags are probelet.io/ strings that name no object: the
// state file's format versions (history/).
const names = "probespec/names.go"

var formatTags = map[string]string{
	"probelet.io/history/v1": "history/history.go",
	"probelet.io/history/v2": "history/history.go",
}

// TestNamesAreDefinedOnce: outside probespec/names.go no code (tests and
// test support aside, which spell names out as a check) writes a
// probelet.io/ name or one of the reasons defined there as a literal.
func TestNamesAreDefinedOnce(t *testing.T) {
	dir := root(t)
	defined := map[string]bool{}
	for _, v := range stringLiterals(t, filepath.Join(dir, names)) {
		defined[v] = true
	}
	// Words too common to hold to one file.
	for _, generic := range []string{"Normal", "Warning", "managed", "unmanaged", "probelet-system"} {
		delete(defined, generic)
	}
	if len(defined) < 20 {
		t.Fatalf("%s defines %d names: not the file this test reads?", names, len(defined))
	}
	for path, p := range packages(t) {
		if isExempt(path) || strings.HasSuffix(p.Name, "test") {
			continue
		}
		for _, f := range p.GoFiles {
			file := filepath.Join(p.Dir, f)
			rel, _ := filepath.Rel(dir, file)
			if rel == names {
				continue
			}
			for _, v := range stringLiterals(t, file) {
				switch {
				case formatTags[v] == rel:
				case strings.HasPrefix(v, "probelet.io/"), defined[v]:
					t.Errorf("%s spells out %q: use probespec's name for it", rel, v)
				}
			}
		}
	}
}

// stringLiterals are the values of the string literals in a Go file.
func stringLiterals(t *testing.T, file string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if v, err := strconv.Unquote(lit.Value); err == nil {
				out = append(out, v)
			}
		}
		return true
	})
	return out
}

// TestARCHITECTUREListsEveryRoom: each room of the table has its row in
// ARCHITECTURE.md, so the picture and the rules cannot drift apart.
func TestARCHITECTUREListsEveryRoom(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(root(t), "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rooms {
		if !strings.Contains(string(doc), "| `"+r.room+"/` |") && !strings.Contains(string(doc), "| `"+r.room+"` |") {
			t.Errorf("ARCHITECTURE.md has no row for the room %s", r.room)
		}
	}
}
