package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/probelet/probelet/probespec/convert"
)

// Exit statuses of `probelet convert`.
const (
	convertOK     = 0
	convertFailed = 1
	convertUsage  = 2
)

const convertUsageText = `Usage: probelet convert [--diff | --write] [FILE|DIR|-]...

Moves each container's livenessProbe, readinessProbe and startupProbe of
Kubernetes manifests into the pod's probelet.io/probes annotation, so that
probelet runs them and the kubelet does not, and adds the probelet.io/ready
readiness gate where a readiness probe moved. Nothing else changes:
comments, key order and formatting are kept, and a converted manifest
converts to itself.

Reads YAML or JSON, several documents per file: Pod, Deployment,
StatefulSet, DaemonSet, ReplicaSet, ReplicationController, Job, CronJob,
PodTemplate and List; other kinds pass through. A DIR is searched for
*.yaml, *.yml and *.json files; no argument or "-" reads stdin.

Probes of init containers are moved only for sidecars (restartPolicy:
Always); on a plain init container they are an error, as in the API
server. A probe already in the annotation is dropped from the spec when it
is the same, and an error when it differs. The result must pass the checks
of 'probelet validate'.

By default the converted manifests are printed (several inputs as one YAML
stream, each after a "# Source: FILE" line). --diff prints a unified diff
instead; --write rewrites the files in place. An input with any error is
neither printed nor written; the others are.

Exit status: 0 done, 1 some input could not be converted (every error on
stderr, naming file, document, object and field), 2 usage or I/O error.

Flags:
`

// convertOptions are the command line of `probelet convert`.
type convertOptions struct {
	diff, write bool
	inputs      []string
}

// convertInput is one file (or stdin) to convert.
type convertInput struct {
	name string // as messages show it
	path string // "" for stdin
	data []byte
	mode fs.FileMode
}

// runConvert runs `probelet convert` and returns its exit status.
func runConvert(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	o, code, ok := parseConvertArgs(args, stderr)
	if !ok {
		return code
	}
	inputs, err := o.read(stdin)
	if err != nil {
		fmt.Fprintf(stderr, "probelet convert: %v\n", err)
		return convertUsage
	}
	code = convertOK
	for i, in := range inputs {
		res, errs := convert.Convert(in.data)
		for _, e := range errs {
			fmt.Fprintf(stderr, "%s: %v\n", in.name, e)
		}
		if len(errs) > 0 {
			code = convertFailed
			continue
		}
		if err := o.emit(in, res, i, len(inputs), stdout, stderr); err != nil {
			fmt.Fprintf(stderr, "probelet convert: %v\n", err)
			return convertUsage
		}
	}
	return code
}

func parseConvertArgs(args []string, stderr io.Writer) (convertOptions, int, bool) {
	var o convertOptions
	fs := pflag.NewFlagSet("convert", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SortFlags = false
	fs.Usage = func() {
		fmt.Fprint(stderr, convertUsageText)
		fs.PrintDefaults()
	}
	fs.BoolVar(&o.diff, "diff", false, "print a unified diff of the change instead of the converted manifests")
	fs.BoolVarP(&o.write, "write", "w", false, "rewrite the files in place")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return o, convertOK, false
		}
		fmt.Fprintln(stderr, err)
		fs.Usage()
		return o, convertUsage, false
	}
	o.inputs = fs.Args()
	switch {
	case o.diff && o.write:
		fmt.Fprintln(stderr, "probelet convert: --diff and --write exclude each other")
		return o, convertUsage, false
	case o.write && (len(o.inputs) == 0 || slices.Contains(o.inputs, "-")):
		fmt.Fprintln(stderr, "probelet convert: --write needs files to rewrite, not stdin")
		return o, convertUsage, false
	}
	return o, convertOK, true
}

// read returns every input: the files named, those of the directories
// named (sorted), or stdin.
func (o convertOptions) read(stdin io.Reader) ([]convertInput, error) {
	if len(o.inputs) == 0 {
		o.inputs = []string{"-"}
	}
	var out []convertInput
	for _, arg := range o.inputs {
		if arg == "-" {
			data, err := io.ReadAll(stdin)
			if err != nil {
				return nil, fmt.Errorf("stdin: %w", err)
			}
			out = append(out, convertInput{name: "stdin", data: data})
			continue
		}
		files, err := manifestFiles(arg)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			st, err := os.Stat(f)
			if err != nil {
				return nil, err
			}
			data, err := os.ReadFile(f)
			if err != nil {
				return nil, err
			}
			out = append(out, convertInput{name: f, path: f, data: data, mode: st.Mode().Perm()})
		}
	}
	return out, nil
}

// manifestFiles is path itself, or the manifests under the directory path.
func manifestFiles(path string) ([]string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return []string{path}, nil
	}
	var out []string
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch filepath.Ext(p) {
		case ".yaml", ".yml", ".json":
			if !d.IsDir() {
				out = append(out, p)
			}
		}
		return nil
	})
	if err == nil && len(out) == 0 {
		err = fmt.Errorf("%s: no *.yaml, *.yml or *.json files", path)
	}
	return out, err
}

// emit prints, diffs or writes one converted input.
func (o convertOptions) emit(in convertInput, res convert.Result, i, n int, stdout, stderr io.Writer) error {
	switch {
	case o.diff:
		_, err := io.WriteString(stdout, convert.Diff("a/"+strings.TrimPrefix(in.name, "/"), "b/"+strings.TrimPrefix(in.name, "/"), in.data, res.Output))
		return err
	case o.write:
		if !res.Changed() {
			return nil
		}
		if err := writeAtomically(in.path, res.Output, in.mode); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "converted %s: %s\n", in.name, summary(res))
		return nil
	}
	if n > 1 {
		sep := "---\n"
		if i == 0 {
			sep = ""
		}
		if _, err := fmt.Fprintf(stdout, "%s# Source: %s\n", sep, in.name); err != nil {
			return err
		}
	}
	out := res.Output
	if n > 1 && len(out) > 0 && !strings.HasSuffix(string(out), "\n") {
		out = append(out, '\n')
	}
	_, err := stdout.Write(out)
	return err
}

// summary says what moved: "2 probes moved in 1 pod template".
func summary(res convert.Result) string {
	probes := 0
	for _, c := range res.Changes {
		probes += len(c.Moved) + len(c.Merged)
	}
	return fmt.Sprintf("%s moved in %s", plural(probes, "probe"), plural(len(res.Changes), "pod template"))
}

// writeAtomically replaces path with data through a temporary file in the
// same directory, keeping the file's permission bits.
func writeAtomically(path string, data []byte, mode fs.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
