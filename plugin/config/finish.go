package config

import (
	"context"
	"io"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/localize"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/ocm"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/pipeline"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/render/manifests"
)

// The finishing work a plan carries (pipeline.Finisher): it runs once, over
// the whole output, after every step is rendered and placed.

// patchSet is the patches of one render, applied to the whole output (a
// patch may target what another render produced), recorded in the report.
type patchSet struct {
	patches []boundPatch
	report  *Report
}

func (ps patchSet) Finish(_ context.Context, objs []manifests.Object) ([]manifests.Object, error) {
	for _, bp := range ps.patches {
		objects, err := bp.apply(objs)
		if err != nil {
			return nil, err
		}
		ps.report.addPatch(bp, objects)
	}
	return objs, nil
}

// localization is automatic localisation of the whole output.
type localization struct {
	d          *ocm.Descriptor
	requireAll bool
	log        io.Writer
	report     *Report
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

// explanation hands the finished report to Planner.Explain, with the sync
// order of the output.
type explanation struct {
	report  *Report
	explain func(*Report)
}

func (e explanation) Finish(_ context.Context, objs []manifests.Object) ([]manifests.Object, error) {
	e.report.addOrdering(objs)
	e.explain(e.report)
	return objs, nil
}

// finish is the plan's own finishing work, after the patches of its steps:
// automatic localisation, then the report.
func (rs *resolver) finish() []pipeline.Finisher {
	var out []pipeline.Finisher
	if rs.autoLocalize {
		out = append(out, localization{d: rs.cv.Descriptor(), requireAll: rs.requireAll, log: rs.p.Log, report: rs.report})
	}
	if rs.p.Explain != nil {
		out = append(out, explanation{report: rs.report, explain: rs.p.Explain})
	}
	return out
}
