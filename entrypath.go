package argocdocm

import (
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/plan"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// EntryPathLabel is the resource label by which a component declares the
// entry path of a directoryTree resource (a JSON string, "overlays/prod"),
// so that Applications need not repeat it. A path the Application chooses
// (--path, parameter path, a definition's path) takes precedence.
const EntryPathLabel = plan.EntryPathLabel

// EntryPath is the entry path res renders at: path (the request's or a
// definition's), else the resource's EntryPathLabel, else "" (the no-path
// rules of kustomize.Entry).
func EntryPath(path string, res ocm.Resource) (string, error) { return plan.EntryPath(path, res) }
