package main

import (
	"fmt"
	"strings"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/pipeline"
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

// applyTenancy sets on a generate request what the sidecar's operator
// decides. A switch only ever turns a guard on or an allowance off when it is
// misspelt: an unknown value is an error, not a silent default.
func applyTenancy(req *pipeline.Request, getenv func(string) string) error {
	for _, s := range []struct {
		env string
		to  *bool
	}{
		{envRequireComponentImages, &req.RequireComponentImages},
		{envPlatformAllowOtherProjects, &req.Platform.AllowOtherProjects},
		{envPlatformAllowOtherDestinations, &req.Platform.AllowOtherDestinations},
	} {
		v, err := parseSwitch(s.env, getenv(s.env))
		if err != nil {
			return err
		}
		*s.to = *s.to || v
	}
	return nil
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
