package probespec

import (
	"reflect"
	"strings"
)

// suggest returns the known field closest to the unknown field at the end
// of a dotted path ("livenessProbe.perodSeconds" → "periodSeconds"), or ""
// when nothing is close. Typos and wrong case are the usual mistakes.
func suggest(path string) string {
	segs := strings.Split(path, ".")
	t := reflect.TypeOf(ContainerProbes{})
	for _, seg := range segs[:len(segs)-1] {
		if t = childType(t, seg); t == nil {
			return ""
		}
	}
	unknown := segs[len(segs)-1]
	best, bestDist := "", 3 // at most two edits away
	for _, name := range jsonFields(t) {
		if strings.EqualFold(name, unknown) {
			return name
		}
		if d := editDistance(strings.ToLower(name), strings.ToLower(unknown)); d < bestDist {
			best, bestDist = name, d
		}
	}
	return best
}

// childType follows one path segment ("httpHeaders[1]") into a struct type.
func childType(t reflect.Type, seg string) reflect.Type {
	name, indexed := seg, false
	if i := strings.IndexByte(seg, '['); i >= 0 {
		name, indexed = seg[:i], true
	}
	t = structOf(t)
	if t == nil {
		return nil
	}
	f, ok := fieldByJSONName(t, name)
	if !ok {
		return nil
	}
	ft := f.Type
	if indexed && ft.Kind() == reflect.Slice {
		ft = ft.Elem()
	}
	return ft
}

// structOf dereferences pointers; nil when t is not a struct.
func structOf(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	return t
}

// fieldByJSONName finds a field by its JSON name, looking into inlined
// embedded structs (ProbeHandler).
func fieldByJSONName(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			if sub := structOf(f.Type); sub != nil {
				if ef, ok := fieldByJSONName(sub, name); ok {
					return ef, true
				}
			}
			continue
		}
		if jsonName(f) == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// jsonFields lists the JSON names of a struct's fields, inlined ones included.
func jsonFields(t reflect.Type) []string {
	t = structOf(t)
	if t == nil {
		return nil
	}
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			names = append(names, jsonFields(f.Type)...)
			continue
		}
		if n := jsonName(f); n != "" && n != "-" {
			names = append(names, n)
		}
	}
	return names
}

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "" {
		return f.Name
	}
	return name
}

// editDistance is the Levenshtein distance between two short strings.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
