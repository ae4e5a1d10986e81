package explain

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/finish/hooks"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/finish/localize"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/expr"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/plan"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
)

// Value layers, lowest first. Maps merge deeply; lists and scalars replace.
const (
	LayerChart        = "chart defaults"  // the chart's values.yaml (Helm merges it; shown by --explain)
	LayerConfig       = "config resource" // helmValues / ConfigData resources shipped in the component
	LayerLocalization = "localization"    // image mappings and localization-hint labels
	LayerDefinition   = "definition"      // the deployment definition's values
	LayerInstance     = "instance"        // the Application's / CLI's values files, values and --set
)

// Origin says who set a value.
type Origin struct {
	Layer  string
	Source string // e.g. "resource config", "spec.renders[0].values.replicaCount", "--set replicaCount=3"
	Expr   string // the CEL expression that computed the value, if any
	Value  any
}

// Leaf is one value with the layers that set it, latest last.
type Leaf struct {
	Path    string
	Value   any
	History []Origin
}

// ParamValue is a resolved instance parameter.
type ParamValue struct {
	Name   string
	Type   string
	Value  any
	From   string // "instance" or "default" (config.FromInstance, config.FromDefault)
	Secret bool
}

// JobReport is one job of a report.
type JobReport struct {
	Name     string // the Job's name
	Resource string // the image resource
	Image    string // the image the Job runs
	Hook     string // type and delete policy
	Wave     *int
	Skipped  string // why the job was left out, "" when it runs
}

// Report explains a render: the definition used, the instance parameters,
// per render the value of every path with the layers that set it, what each
// CEL expression evaluated to, the patches applied, and what automatic
// localisation did with every image.
type Report struct {
	Component, Version string
	Definition         string
	Parameters         []ParamValue
	Renders            []RenderReport
	Expressions        []expr.Evaluation
	Patches            []PatchReport
	Localized          bool
	Images             []localize.Change
	Jobs               []JobReport
	// Order is the output in Argo CD's sync order, Unsynced what a sync does
	// not apply, Defaults the waves the pipeline gives Namespaces and CRDs;
	// all empty when the output has no hooks and no waves.
	Order    []hooks.Step
	Unsynced []hooks.Unsynced
	Defaults []hooks.Assigned
	Notes    []string
}

// RenderReport is one render of a report.
type RenderReport struct {
	Name, Resource, Type string
	ReleaseName          string
	Namespace            string
	Path                 string
	// PathAt and NamespaceAt say where the definition sets Path and
	// Namespace ("definition line 9, column 5"), "" when it does not.
	PathAt, NamespaceAt string
	Skipped             string // why the render was skipped, "" when it ran
	// Overlay is the kustomization generated over a kustomize entry (see
	// kustomize.Overlay), "" when the render has none.
	Overlay string
	// OverlayNamespace is the namespace field of Overlay, OverlayNamespaceAt
	// where it comes from; "" when the overlay sets none.
	OverlayNamespace, OverlayNamespaceAt string
	// ApplicationOverlay says that the render builds the Application's own
	// kustomization over the resource, "" when it does not.
	ApplicationOverlay string
	Values             []Leaf
}

// PatchReport is one applied patch.
type PatchReport struct {
	Render  string
	Source  string
	Path    string
	Value   any
	Objects []string
	Secret  bool // the value went into a Secret; Value is not shown
}

// AddNote adds a line to the report's notes (argocdocm.Explanation).
func (r *Report) AddNote(note string) { r.Notes = append(r.Notes, note) }

// AddOrdering records the sync order of the output, with the defaults the
// pipeline applies last (on a copy: objs stay as they are).
func (r *Report) AddOrdering(objs []manifests.Object) {
	cp := make([]manifests.Object, len(objs))
	for i, o := range objs {
		cp[i] = manifests.DeepCopy(o)
	}
	defaults := hooks.ApplyDefaults(cp)
	order, unsynced := hooks.SyncOrder(cp)
	relevant := len(defaults) > 0 || len(unsynced) > 0
	for _, s := range order {
		relevant = relevant || s.Hook || s.Wave != 0
	}
	if relevant {
		r.Order, r.Unsynced, r.Defaults = order, unsynced, defaults
	}
}

// WriteText writes the report for people.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "component: %s:%s\n", r.Component, r.Version)
	fmt.Fprintf(&b, "definition: %s\n", r.Definition)
	r.writeParameters(&b)
	for _, rr := range r.Renders {
		writeRender(&b, rr)
	}
	r.writeJobs(&b)
	if len(r.Expressions) > 0 {
		b.WriteString("\nexpressions:\n")
		for _, e := range r.Expressions {
			fmt.Fprintf(&b, "  %s: ${%s} = %s\n", e.Where, e.Expr, errdef.Cut(formatValue(e.Result)))
		}
	}
	if len(r.Patches) > 0 {
		b.WriteString("\npatches:\n")
		for _, p := range r.Patches {
			fmt.Fprintf(&b, "  %s: %s = %s  in %s\n", p.Source, p.Path, errdef.Cut(formatValue(p.Value)), strings.Join(p.Objects, ", "))
		}
	}
	if r.Localized {
		b.WriteString("\nautomatic localization:\n")
		if len(r.Images) == 0 {
			b.WriteString("  no container images in the rendered workloads\n")
		}
		for _, c := range r.Images {
			fmt.Fprintf(&b, "  %s\n", c)
		}
	}
	r.writeSyncOrder(&b)
	if len(r.Notes) > 0 {
		b.WriteString("\nnotes:\n")
		for _, n := range r.Notes {
			fmt.Fprintf(&b, "  %s\n", n)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func (r *Report) writeParameters(b *strings.Builder) {
	if len(r.Parameters) == 0 {
		return
	}
	b.WriteString("\nparameters:\n")
	width := 0
	for _, p := range r.Parameters {
		width = max(width, len(p.Name))
	}
	for _, p := range r.Parameters {
		note := p.From
		if p.Secret {
			note += ", secret reference"
		}
		fmt.Fprintf(b, "  %-*s = %s  (%s, %s)\n", width, p.Name, formatValue(p.Value), p.Type, note)
	}
}

// writeRender explains one render: where it goes and, with their layers,
// its values.
func writeRender(b *strings.Builder, rr RenderReport) {
	fmt.Fprintf(b, "\nrender %s: resource %s (%s)", rr.Name, rr.Resource, rr.Type)
	if rr.Skipped != "" {
		fmt.Fprintf(b, " skipped: %s\n", rr.Skipped)
		return
	}
	b.WriteString("\n")
	if rr.Type == "helmChart" {
		fmt.Fprintf(b, "  release: %s, namespace: %s\n", orDefault(rr.ReleaseName, "(helm default)"), orDefault(rr.Namespace, "(default)"))
	} else {
		writeDirectoryRules(b, rr)
		if rr.ApplicationOverlay != "" {
			b.WriteString("  kustomize overlay of the Application: " + rr.ApplicationOverlay + "\n")
		}
		if rr.Overlay != "" {
			b.WriteString("  kustomize overlay (built by kustomize over the entry instead of patching after rendering):\n")
			for _, line := range strings.Split(strings.TrimRight(rr.Overlay, "\n"), "\n") {
				b.WriteString("    " + line + "\n")
			}
		}
	}
	if len(rr.Values) == 0 {
		return
	}
	layers := []string{LayerChart, LayerConfig, LayerLocalization, LayerDefinition, LayerInstance}
	fmt.Fprintf(b, "  values (layers, lowest first: %s):\n", strings.Join(layers, " < "))
	for _, l := range rr.Values {
		writeLeaf(b, l)
	}
}

// writeLeaf writes a value and the layers that set it, the last first.
func writeLeaf(b *strings.Builder, l Leaf) {
	fmt.Fprintf(b, "    %s = %s\n", l.Path, errdef.Cut(formatValue(l.Value)))
	for i := len(l.History) - 1; i >= 0; i-- {
		o := l.History[i]
		prefix := "      <- "
		if i < len(l.History)-1 {
			prefix = "      overrides "
		}
		line := prefix + o.Layer
		if o.Source != "" {
			line += ": " + o.Source
		}
		if o.Expr != "" {
			line += "  " + o.Expr
		}
		if i < len(l.History)-1 {
			line += " = " + errdef.Cut(formatValue(o.Value))
		}
		b.WriteString(line + "\n")
	}
}

func (r *Report) writeJobs(b *strings.Builder) {
	if len(r.Jobs) == 0 {
		return
	}
	b.WriteString("\njobs:\n")
	for _, j := range r.Jobs {
		if j.Skipped != "" {
			fmt.Fprintf(b, "  %s: skipped: %s\n", j.Name, j.Skipped)
			continue
		}
		wave := ""
		if j.Wave != nil {
			wave = fmt.Sprintf(", wave %d", *j.Wave)
		}
		fmt.Fprintf(b, "  %s: image %s (resource %s), hook %s%s\n", j.Name, j.Image, j.Resource, j.Hook, wave)
	}
}

func (r *Report) writeSyncOrder(b *strings.Builder) {
	if len(r.Order) == 0 && len(r.Unsynced) == 0 {
		return
	}
	b.WriteString("\nsync order (Argo CD: phase, wave, kind, name):\n")
	defaulted := map[string]bool{}
	for _, d := range r.Defaults {
		defaulted[d.Object] = true
	}
	for _, s := range r.Order {
		line := fmt.Sprintf("  %-8s wave %-4d %s", s.Phase, s.Wave, s.Object)
		if s.Hook {
			line += "  (hook, delete policy " + strings.Join(s.DeletePolicies, ",") + ")"
		}
		if defaulted[s.Object] {
			line += "  (default: before every wave)"
		}
		b.WriteString(line + "\n")
	}
	for _, u := range r.Unsynced {
		fmt.Fprintf(b, "  not synced: %s: %s\n", u.Object, u.Why)
	}
}

// writeDirectoryRules explains the entry path and the destination namespace
// of a directoryTree render (see docs/kustomize.md), with the definition's
// lines that set them.
func writeDirectoryRules(b *strings.Builder, rr RenderReport) {
	if rr.Path != "" {
		fmt.Fprintf(b, "  path: %s%s\n", rr.Path, at(rr.PathAt))
	} else {
		fmt.Fprintf(b, "  path: (not set) the resource label %s, else the root kustomization, else plain manifests if the tree has no kustomization; refused if its kustomizations are all below the root\n", plan.EntryPathLabel)
	}
	ns := "the Application's destination namespace"
	if rr.Namespace != "" {
		ns = fmt.Sprintf("the destination namespace %s%s", errdef.Quote(rr.Namespace), at(rr.NamespaceAt))
	}
	fmt.Fprintf(b, "  namespace: not written into the output, as Argo CD does for kustomize and directory sources: objects without a namespace are put into %s by Argo CD at sync; objects the kustomization or manifests place keep theirs\n", ns)
	if rr.OverlayNamespace != "" {
		fmt.Fprintf(b, "  namespace of the overlay: %s%s, set by kustomize on every object of the entry that is not cluster-scoped, so none of them gets the destination namespace\n", errdef.Quote(rr.OverlayNamespace), at(rr.OverlayNamespaceAt))
	}
}

// at is " (where)", or "" when where is.
func at(where string) string {
	if where == "" {
		return ""
	}
	return " (" + where + ")"
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// formatValue renders a value compactly for reports and messages.
func formatValue(v any) string {
	switch v := v.(type) {
	case string:
		return strconv.Quote(v)
	case map[string]any:
		if len(v) == 0 {
			return "{}"
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + ": " + formatValue(v[k])
		}
		return "{" + strings.Join(parts, ", ") + "}"
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Sprint(v)
		}
		return string(b)
	}
}
