package plan

import (
	"encoding/json"
	"fmt"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// EntryPathLabel is the resource label by which a component declares the
// entry path of a directoryTree resource (a JSON string, "overlays/prod"),
// so that Applications need not repeat it. OCM defines no label for this;
// the name is in the plugin's own label namespace. A path the Application
// chooses (--path, parameter path, a definition's path) takes precedence.
const EntryPathLabel = "argocd-ocm-plugin.io/entry-path"

// EntryPath is the entry path res renders at: path (the request's or a
// definition's), else the resource's EntryPathLabel, else "" (the no-path
// rules of kustomize.Entry).
func EntryPath(path string, res ocm.Resource) (string, error) {
	if path != "" {
		return path, nil
	}
	l, ok := res.Label(EntryPathLabel)
	if !ok {
		return "", nil
	}
	var p string
	if err := json.Unmarshal(l.Value, &p); err != nil || p == "" {
		return "", fmt.Errorf("%w: resource %s: label %s must be a non-empty string (a path inside the resource), got %.80s",
			errdef.ErrInvalidInput, res.Identity(), EntryPathLabel, string(l.Value))
	}
	return p, nil
}
