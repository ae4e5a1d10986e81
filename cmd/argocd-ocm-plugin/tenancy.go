package main

import (
	"fmt"
	"strings"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/policy"
)

// Tenant isolation switches of the sidecar. Like every sidecar setting they
// are read WITHOUT the ARGOCD_ENV_ prefix, so an Application cannot set them;
// they are shorthands of the sidecar policy's default rule.
const (
	// envRequireComponentImages "true": the image origin guard for every
	// Application (see package imageguard).
	envRequireComponentImages = "ARGOCD_OCM_REQUIRE_COMPONENT_IMAGES"
	// envPlatformAllowOtherProjects "true": a platform config may give child
	// Applications another project than their parent's (and platforms render
	// on Argo CD before 3.0, which does not pass the parent's project).
	envPlatformAllowOtherProjects = "ARGOCD_OCM_PLATFORM_ALLOW_OTHER_PROJECTS"
	// envPlatformAllowOtherDestinations "true": a platform config may send
	// child Applications to another cluster or namespace.
	envPlatformAllowOtherDestinations = "ARGOCD_OCM_PLATFORM_ALLOW_OTHER_DESTINATIONS"
)

// tenancy are the sidecar's tenancy switches, read before the rule so that
// a misspelt one is the error a generation reports.
type tenancy struct {
	requireImages, otherProjects, otherDestinations bool
}

// readTenancy reads the tenancy switches of the sidecar's environment. A
// switch only ever turns a guard on or an allowance off when it is
// misspelt: an unknown value is an error, not a silent default.
func readTenancy(getenv func(string) string) (tenancy, error) {
	var t tenancy
	for _, s := range []struct {
		env string
		to  *bool
	}{
		{envRequireComponentImages, &t.requireImages},
		{envPlatformAllowOtherProjects, &t.otherProjects},
		{envPlatformAllowOtherDestinations, &t.otherDestinations},
	} {
		v, err := parseSwitch(s.env, getenv(s.env))
		if err != nil {
			return tenancy{}, err
		}
		*s.to = v
	}
	return t, nil
}

// apply turns the switches into fields of a copy of the generation's rule
// (what the sidecar's operator decides): each switch adds to what the rule
// already allows or requires, it never takes anything away.
func (t tenancy) apply(rule *policy.Rule) *policy.Rule {
	r := *rule
	r.RequireComponentImages = r.RequireComponentImages || t.requireImages
	r.Platform.AllowOtherProjects = r.Platform.AllowOtherProjects || t.otherProjects
	r.Platform.AllowOtherDestinations = r.Platform.AllowOtherDestinations || t.otherDestinations
	return &r
}

func parseSwitch(name, s string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "1", "true", "yes", "on":
		return true, nil
	case "", "0", "false", "no", "off":
		return false, nil
	}
	if len(s) > 12 {
		s = s[:12] + "…"
	}
	return false, fmt.Errorf("%w: %s=%q: want true or false", errdef.ErrInvalidInput, name, s)
}
