package platform

import (
	"bytes"
	"fmt"
	"reflect"
	"sort"
	"strings"

	yaml "go.yaml.in/yaml/v3"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
)

// unknownField finds the first field of a platform config document that its
// types do not have, and says where: "packages.podinfo.valuez (line 4):
// unknown field (fields: …)". "" when there is none, or the document does
// not parse (the decoder's own error is clear enough then).
func unknownField(data []byte) string {
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&doc); err != nil || len(doc.Content) == 0 {
		return ""
	}
	return walkFields(doc.Content[0], reflect.TypeOf(Config{}), "", 0)
}

func walkFields(n *yaml.Node, t reflect.Type, path string, depth int) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind != yaml.MappingNode || depth > 8 {
		return ""
	}
	switch t.Kind() {
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return ""
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if msg := walkFields(n.Content[i+1], t.Elem(), join(path, n.Content[i].Value), depth+1); msg != "" {
				return msg
			}
		}
	case reflect.Struct:
		fields := map[string]reflect.Type{}
		for i := 0; i < t.NumField(); i++ {
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
			if name != "" && name != "-" {
				fields[name] = t.Field(i).Type
			}
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			ft, ok := fields[k.Value]
			if !ok {
				names := make([]string, 0, len(fields))
				for f := range fields {
					names = append(names, f)
				}
				sort.Strings(names)
				return fmt.Sprintf("%s (line %d): unknown field (fields: %s)", join(path, errdef.Quote(k.Value)), k.Line, errdef.Cut(strings.Join(names, ", ")))
			}
			if ft.Kind() == reflect.Map && ft.Elem().Kind() == reflect.Interface {
				continue // free-form: values, syncPolicy
			}
			if msg := walkFields(n.Content[i+1], ft, join(path, k.Value), depth+1); msg != "" {
				return msg
			}
		}
	}
	return ""
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
