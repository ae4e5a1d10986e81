package deployment

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/finish/hooks"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/finish/localize"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/explain"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/plan"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/fieldpath"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// The finishing work a plan carries (plan.Finisher): it runs once, over
// the whole output, after every step is rendered and placed.

// patchSet is the patches of one render, applied to the whole output (a
// patch may target what another render produced), recorded in the report.
type patchSet struct {
	patches []boundPatch
	report  *explain.Report
}

func (ps patchSet) Finish(_ context.Context, objs []manifests.Object) ([]manifests.Object, error) {
	for _, bp := range ps.patches {
		objects, err := bp.apply(objs)
		if err != nil {
			return nil, err
		}
		ps.report.Patches = append(ps.report.Patches, explain.PatchReport{Render: bp.render, Source: bp.source, Path: bp.path.String(), Value: bp.value, Objects: objects})
	}
	return objs, nil
}

// apply sets the patch in every object a target matches; a patch that
// matches nothing is an error (a typo would otherwise go unnoticed).
func (bp boundPatch) apply(objs []manifests.Object) ([]string, error) {
	var hit []string
	for _, o := range objs {
		match := false
		for _, t := range bp.targets {
			if hooks.Selector(t).Matches(o) {
				match = true
				break
			}
		}
		if !match {
			continue
		}
		if err := fieldpath.Set(o, bp.path, manifests.DeepCopy(bp.value)); err != nil {
			return nil, fmt.Errorf("%w: %s: %s: %v", errdef.ErrInvalidInput, bp.source, localize.Describe(o), err)
		}
		hit = append(hit, localize.Describe(o))
	}
	if len(hit) == 0 {
		ts := make([]string, len(bp.targets))
		for i, t := range bp.targets {
			ts[i] = t.String()
		}
		return nil, fmt.Errorf("%w: %s: no rendered object matches %s (render %s)", errdef.ErrNotFound, bp.source, errdef.Cut(strings.Join(ts, " or ")), bp.render)
	}
	return hit, nil
}

// localization is automatic localisation of the whole output.
type localization struct {
	d          *ocm.Descriptor
	requireAll bool
	log        io.Writer
	report     *explain.Report
}

func (l localization) Finish(_ context.Context, objs []manifests.Object) ([]manifests.Object, error) {
	changes, err := localize.Run(l.d, objs, l.requireAll, l.log)
	if err != nil {
		return nil, err
	}
	l.report.Images = changes
	l.report.Localized = true
	return objs, nil
}

// Explanation is a plan's last finisher when its report is asked for
// (DefinitionPlanner.Explain): it hands Report, with the sync order of the
// output, to Explain once the output is finished. An RGD's plan ends with
// one too.
type Explanation struct {
	Report  *explain.Report
	Explain func(*explain.Report)
}

func (e Explanation) Finish(_ context.Context, objs []manifests.Object) ([]manifests.Object, error) {
	e.Report.AddOrdering(objs)
	e.Explain(e.Report)
	return objs, nil
}

// finish is the plan's own finishing work, after the patches of its steps:
// automatic localisation, then the report.
func (rs *resolver) finish() []plan.Finisher {
	var out []plan.Finisher
	if rs.autoLocalize {
		out = append(out, localization{d: rs.cv.Descriptor(), requireAll: rs.requireAll, log: rs.p.Log, report: rs.report})
	}
	if rs.p.Explain != nil {
		out = append(out, Explanation{Report: rs.report, Explain: rs.p.Explain})
	}
	return out
}
