package convert

import (
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// lookup returns the key and value nodes of key in mapping m (nil, nil when
// absent or m is not a mapping).
func lookup(m *yaml.Node, key string) (k, v *yaml.Node) {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i], m.Content[i+1]
		}
	}
	return nil, nil
}

// value is lookup's value node.
func value(m *yaml.Node, key string) *yaml.Node {
	_, v := lookup(m, key)
	return v
}

// str is the value of a scalar field, "" when absent or not a scalar.
func str(m *yaml.Node, key string) string {
	if v := value(m, key); v != nil && v.Kind == yaml.ScalarNode {
		return v.Value
	}
	return ""
}

// remove deletes key from mapping m.
func remove(m *yaml.Node, key string) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content = append(m.Content[:i], m.Content[i+2:]...)
			return
		}
	}
}

// set replaces key's value in mapping m, or appends the pair.
func set(m *yaml.Node, key string, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = v
			return
		}
	}
	m.Content = append(m.Content, scalar(key), v)
}

// child returns the mapping under key, created (in block style) when
// absent: first in m when first is set (metadata before spec), else last.
func child(m *yaml.Node, key string, first bool) *yaml.Node {
	if v := value(m, key); v != nil {
		return v
	}
	v := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	if first {
		m.Content = append([]*yaml.Node{scalar(key), v}, m.Content...)
	} else {
		set(m, key, v)
	}
	return v
}

func scalar(s string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
}
