package policy

import (
	"fmt"
	"strings"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
)

// switches are the sidecar's tenancy switches. Like every sidecar setting
// they are read WITHOUT the ARGOCD_ENV_ prefix, so an Application cannot set
// them.
type switches struct {
	requireImages, otherProjects, otherDestinations, provenance bool
}

// readSwitches reads the tenancy switches of the sidecar's environment. A
// switch only ever turns a guard on or an allowance off when it is
// misspelt: an unknown value is an error, not a silent default.
// EnvProvenance, older than the others, is on for "true", "1", "yes" and
// "on" and off for anything else.
func readSwitches(getenv func(string) string) (switches, error) {
	var s switches
	for _, sw := range []struct {
		env string
		to  *bool
	}{
		{EnvRequireComponentImages, &s.requireImages},
		{EnvPlatformAllowOtherProjects, &s.otherProjects},
		{EnvPlatformAllowOtherDestinations, &s.otherDestinations},
	} {
		v, err := parseSwitch(sw.env, getenv(sw.env))
		if err != nil {
			return switches{}, err
		}
		*sw.to = v
	}
	s.provenance, _ = parseSwitch(EnvProvenance, getenv(EnvProvenance))
	return s, nil
}

// apply adds the switches to r: each adds to what the rule already allows
// or requires, it never takes anything away.
func (s switches) apply(r *Rule) {
	r.RequireComponentImages = r.RequireComponentImages || s.requireImages
	r.Platform.AllowOtherProjects = r.Platform.AllowOtherProjects || s.otherProjects
	r.Platform.AllowOtherDestinations = r.Platform.AllowOtherDestinations || s.otherDestinations
	r.Provenance = r.Provenance || s.provenance
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
	return false, fmt.Errorf("%w: %s=%s: want true or false", errdef.ErrInvalidInput, name, errdef.Quote(s))
}
