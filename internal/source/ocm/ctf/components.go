package ctf

import (
	"context"
	"sort"
	"strings"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// ListComponents lists the names of the components the CTF holds a tagged
// version of, sorted: messages name the closest ones to a mistyped name.
func (r *Repository) ListComponents(context.Context) ([]string, error) {
	prefix := ocm.DescriptorRepository("")
	seen := map[string]bool{}
	var out []string
	for _, a := range r.index.Artifacts {
		name, ok := strings.CutPrefix(a.Repository, prefix)
		if !ok || name == "" || a.Tag == "" || seen[name] {
			continue
		}
		seen[name] = true
		out = append(out, name)
	}
	sort.Strings(out)
	return out, nil
}

// ListComponents lists the one component of the archive.
func (a *ComponentArchive) ListComponents(context.Context) ([]string, error) {
	return []string{a.desc.Name}, nil
}
