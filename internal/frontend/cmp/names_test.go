package cmp

import (
	"errors"
	"strings"
	"testing"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
)

func TestUnknownNamesRefused(t *testing.T) {
	s := func(v string) *string { return &v }
	ok := map[string]Parameter{"repository": {String: s("ctf")}, "values": {String: s("a: 1")}, "parameters.replicas": {String: s("2")}, "resolved-version": {String: s("1.0.0")}}
	if err := checkNames(ok, []string{"ARGOCD_ENV_VERSION", "ARGOCD_ENV_VALUE_FILES", "ARGOCD_APP_NAME", "PATH"}); err != nil {
		t.Fatalf("known names refused: %v", err)
	}
	for _, tc := range []struct {
		params map[string]Parameter
		env    []string
		want   string
	}{
		{map[string]Parameter{"valuess": {String: s("a: 1")}}, nil, `unknown parameter "valuess", did you mean "values"?`},
		{map[string]Parameter{"versoin": {String: s("1")}}, nil, `did you mean "version"?`},
		{map[string]Parameter{"parameters.": {String: s("1")}}, nil, `unknown parameter "parameters."`},
		{map[string]Parameter{"zzz": {String: s("1")}}, nil, `unknown parameter "zzz" (known: repository, component, version`},
		{nil, []string{"ARGOCD_ENV_VERSON"}, `unknown plugin environment variable "ARGOCD_ENV_VERSON", did you mean "ARGOCD_ENV_VERSION"?`},
	} {
		err := checkNames(tc.params, tc.env)
		if !errors.Is(err, errdef.ErrInvalidInput) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v %v: %v, want %q", tc.params, tc.env, err, tc.want)
		}
	}
	long := strings.Repeat("x", 5000)
	if err := checkNames(map[string]Parameter{long: {}}, nil); err == nil || len(err.Error()) > 1500 {
		t.Errorf("an overlong unknown name: %d bytes", len(err.Error()))
	}
}
