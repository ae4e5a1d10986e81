package argocdocm

import "github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/plan"

// EntryPathLabel is the resource label by which a component declares the
// entry path of a directoryTree resource (a JSON string, "overlays/prod"),
// so that Applications need not repeat it. A path the Application chooses
// (--path, parameter path, a definition's path) takes precedence.
const EntryPathLabel = plan.EntryPathLabel
