package config

import (
	"fmt"
	"io"
	"strings"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/localize"
)

// Report explains a render: the definition used, the instance parameters,
// per render the value of every path with the layers that set it, what each
// CEL expression evaluated to, the patches applied, and what automatic
// localisation did with every image.
type Report struct {
	Component, Version string
	Definition         string
	Parameters         []ParamValue
	Renders            []RenderReport
	Expressions        []Evaluation
	Patches            []PatchReport
	Localized          bool
	Images             []localize.Change
	Notes              []string
}

// RenderReport is one render of a report.
type RenderReport struct {
	Name, Resource, Type string
	ReleaseName          string
	Namespace            string
	Path                 string
	Skipped              string // why the render was skipped, "" when it ran
	Values               []Leaf
}

// PatchReport is one applied patch.
type PatchReport struct {
	Render  string
	Source  string
	Path    string
	Value   any
	Objects []string
}

func (r *Report) addPatch(bp boundPatch, objects []string) {
	r.Patches = append(r.Patches, PatchReport{Render: bp.render, Source: bp.source, Path: bp.path.String(), Value: bp.value, Objects: objects})
}

// WriteText writes the report for people.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "component: %s:%s\n", r.Component, r.Version)
	fmt.Fprintf(&b, "definition: %s\n", r.Definition)
	if len(r.Parameters) > 0 {
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
			fmt.Fprintf(&b, "  %-*s = %s  (%s, %s)\n", width, p.Name, formatValue(p.Value), p.Type, note)
		}
	}
	layers := []string{LayerChart, LayerConfig, LayerLocalization, LayerDefinition, LayerInstance}
	for _, rr := range r.Renders {
		fmt.Fprintf(&b, "\nrender %s: resource %s (%s)", rr.Name, rr.Resource, rr.Type)
		if rr.Skipped != "" {
			fmt.Fprintf(&b, " skipped: %s\n", rr.Skipped)
			continue
		}
		b.WriteString("\n")
		if rr.Type == "helmChart" {
			fmt.Fprintf(&b, "  release: %s, namespace: %s\n", orDefault(rr.ReleaseName, "(helm default)"), orDefault(rr.Namespace, "(default)"))
		} else if rr.Path != "" {
			fmt.Fprintf(&b, "  path: %s\n", rr.Path)
		}
		if len(rr.Values) == 0 {
			continue
		}
		fmt.Fprintf(&b, "  values (layers, lowest first: %s):\n", strings.Join(layers, " < "))
		for _, l := range rr.Values {
			fmt.Fprintf(&b, "    %s = %s\n", l.Path, truncate(formatValue(l.Value), 200))
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
					line += " = " + truncate(formatValue(o.Value), 120)
				}
				b.WriteString(line + "\n")
			}
		}
	}
	if len(r.Expressions) > 0 {
		b.WriteString("\nexpressions:\n")
		for _, e := range r.Expressions {
			fmt.Fprintf(&b, "  %s: ${%s} = %s\n", e.Where, e.Expr, truncate(formatValue(e.Result), 200))
		}
	}
	if len(r.Patches) > 0 {
		b.WriteString("\npatches:\n")
		for _, p := range r.Patches {
			fmt.Fprintf(&b, "  %s: %s = %s  in %s\n", p.Source, p.Path, truncate(formatValue(p.Value), 120), strings.Join(p.Objects, ", "))
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
	if len(r.Notes) > 0 {
		b.WriteString("\nnotes:\n")
		for _, n := range r.Notes {
			fmt.Fprintf(&b, "  %s\n", n)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
