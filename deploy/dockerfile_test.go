package deploy_test

import (
	"bufio"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// repoRoot is the Docker build context: the repository root.
const repoRoot = ".."

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	line int
	cmd  string // upper case
	args string
}

// stage is one FROM ... AS name block.
type stage struct {
	base, name string
	instrs     []instruction
}

// parseDockerfile splits a Dockerfile into stages. It understands what this
// repository's Dockerfile uses (comments, "\" continuations, FROM ... AS);
// there is no Docker engine on the build machines to run the real parser.
func parseDockerfile(file string) ([]stage, error) {
	instrs, err := readInstructions(file)
	if err != nil {
		return nil, err
	}
	var stages []stage
	for _, in := range instrs {
		if in.cmd == "FROM" {
			stages = append(stages, fromStage(in))
			continue
		}
		if len(stages) == 0 {
			return nil, fmt.Errorf("%s:%d: %s before FROM", file, in.line, in.cmd)
		}
		stages[len(stages)-1].instrs = append(stages[len(stages)-1].instrs, in)
	}
	return stages, nil
}

func readInstructions(file string) ([]instruction, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []instruction
	var cur *instruction
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if cur == nil {
			cmd, args, _ := strings.Cut(line, " ")
			cur = &instruction{line: n, cmd: strings.ToUpper(cmd)}
			line = args
		}
		body, more := strings.CutSuffix(line, "\\")
		cur.args = strings.TrimSpace(cur.args + " " + strings.TrimSpace(body))
		if !more {
			out = append(out, *cur)
			cur = nil
		}
	}
	if cur != nil {
		return nil, fmt.Errorf("%s: continuation at end of file", file)
	}
	return out, sc.Err()
}

// fromStage reads "FROM [--platform=...] image [AS name]".
func fromStage(in instruction) stage {
	var fields []string
	for _, f := range strings.Fields(in.args) {
		if !strings.HasPrefix(f, "--") {
			fields = append(fields, f)
		}
	}
	s := stage{base: fields[0]}
	if len(fields) == 3 && strings.EqualFold(fields[1], "AS") {
		s.name = fields[2]
	}
	return s
}

func (s stage) all(cmd string) []instruction {
	var out []instruction
	for _, in := range s.instrs {
		if in.cmd == cmd {
			out = append(out, in)
		}
	}
	return out
}

var goBuild = regexp.MustCompile(`go build .*-o (\S+) (.*)$`)

// TestDockerfile checks what can be checked without a Docker engine: the
// stages, that everything copied or built exists in the repository, that the
// binaries the manifests run are in the image, and that the version stamp
// matches the Makefile's.
func TestDockerfile(t *testing.T) {
	stages, err := parseDockerfile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	if len(stages) != 2 {
		t.Fatalf("want 2 stages (build, image), have %d", len(stages))
	}
	build, image := stages[0], stages[1]
	checkBuildStage(t, build)
	built := builtBinaries(t, build)
	checkImageStage(t, image, build.name, built)
}

func checkBuildStage(t *testing.T, s stage) {
	if s.name != "build" || s.base != "golang:"+goVersion(t) {
		t.Errorf("build stage: FROM %s AS %s, want golang:%s AS build (go.mod's Go)", s.base, s.name, goVersion(t))
	}
	env := strings.Join(argsOf(s.all("ENV")), " ")
	if !strings.Contains(env, "CGO_ENABLED=0") {
		t.Errorf("build stage ENV %q: want CGO_ENABLED=0 for a static binary", env)
	}
	for _, in := range s.all("COPY") {
		for _, src := range copySources(in) {
			if _, err := os.Stat(filepath.Join(repoRoot, src)); err != nil {
				t.Errorf("line %d: COPY source %s: %v", in.line, src, err)
			}
		}
	}
}

// builtBinaries returns the paths `go build -o DIR/ pkgs...` writes, after
// checking every package directory exists and the -X stamp.
func builtBinaries(t *testing.T, s stage) []string {
	var out []string
	for _, in := range s.all("RUN") {
		m := goBuild.FindStringSubmatch(in.args)
		if m == nil {
			continue
		}
		for _, pkg := range strings.Fields(m[2]) {
			if _, err := os.Stat(filepath.Join(repoRoot, pkg)); err != nil {
				t.Errorf("line %d: go build package %s: %v", in.line, pkg, err)
			}
			out = append(out, path.Join(m[1], path.Base(pkg)))
		}
		if want := makefileStamp(t); !strings.Contains(in.args, "-X "+want+"=") {
			t.Errorf("line %d: ldflags do not set %s like the Makefile does", in.line, want)
		}
		if got, want := goBuildFlags(in.args), imageBuildFlags(t); got != want {
			t.Errorf("line %d: go build flags\n  %s\nwant hack/image/build.sh's\n  %s", in.line, got, want)
		}
	}
	if len(out) == 0 {
		t.Error("no go build in the build stage")
	}
	return out
}

// checkImageStage checks the image stage: an empty base, every COPY with
// explicit modes, binaries only from the build stage, other files only from
// hack/image/rootfs (what `make image` adds too), and the binaries the
// manifests run.
func checkImageStage(t *testing.T, s stage, from string, built []string) {
	if s.base != "scratch" {
		t.Errorf("image stage FROM %s, want scratch (what `make image` builds on)", s.base)
	}
	if users := s.all("USER"); len(users) > 0 {
		t.Errorf("line %d: USER set; probelet needs root for the runtime sockets", users[0].line)
	}
	var installed []string
	for _, in := range s.all("COPY") {
		if copyFlag(in, "chmod") == "" {
			t.Errorf("line %d: COPY without --chmod: the checkout's umask would decide the modes", in.line)
		}
		srcs := copySources(in)
		for _, src := range srcs {
			switch {
			case copyFlag(in, "from") == from:
				if !slices.Contains(built, src) {
					t.Errorf("line %d: %s is not built by the build stage (%v)", in.line, src, built)
				}
			case copyFlag(in, "from") != "":
				t.Errorf("line %d: the image copies only from the %s stage and the context", in.line, from)
			case !strings.HasPrefix(src, imageRootfs+"/"):
				t.Errorf("line %d: %s: context files come from %s, like `make image`'s", in.line, src, imageRootfs)
			}
		}
		installed = append(installed, copyTargets(in, srcs)...)
	}
	for _, want := range []string{daemonBinary, installerBinary} {
		if !slices.Contains(installed, want) {
			t.Errorf("image lacks %s, which the manifests run (has %v)", want, installed)
		}
	}
	if ep := argsOf(s.all("ENTRYPOINT")); !slices.Equal(ep, []string{`["` + daemonBinary + `"]`}) {
		t.Errorf("ENTRYPOINT %v, want [%q]", ep, daemonBinary)
	}
}

// copyFlag is the value of a COPY's --name=value flag, "" when unset.
func copyFlag(in instruction, name string) string {
	for _, f := range strings.Fields(in.args) {
		if v, ok := strings.CutPrefix(f, "--"+name+"="); ok {
			return v
		}
	}
	return ""
}

// copySources are a COPY's sources (flags dropped, destination dropped).
func copySources(in instruction) []string {
	var fields []string
	for _, f := range strings.Fields(in.args) {
		if !strings.HasPrefix(f, "--") {
			fields = append(fields, f)
		}
	}
	return fields[:len(fields)-1]
}

func copyTargets(in instruction, srcs []string) []string {
	fields := strings.Fields(in.args)
	dest := fields[len(fields)-1]
	var out []string
	for _, src := range srcs {
		if strings.HasSuffix(dest, "/") {
			out = append(out, dest+path.Base(src))
		} else {
			out = append(out, dest)
		}
	}
	return out
}

func argsOf(ins []instruction) []string {
	var out []string
	for _, in := range ins {
		out = append(out, in.args)
	}
	return out
}

// goVersion is go.mod's language version as a golang image tag (1.26).
func goVersion(t *testing.T) string {
	b, err := os.ReadFile(filepath.Join(repoRoot, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(b)
	if m == nil {
		t.Fatal("go.mod has no go directive")
	}
	return string(m[1])
}

// makefileStamp is the variable the Makefile's -ldflags -X sets.
func makefileStamp(t *testing.T) string {
	b, err := os.ReadFile(filepath.Join(repoRoot, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`-X (\S+)=`).FindSubmatch(b)
	if m == nil {
		t.Fatal("Makefile sets no -X version stamp")
	}
	return string(m[1])
}
