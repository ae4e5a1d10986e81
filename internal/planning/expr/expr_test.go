package expr_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/expr"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/testutil"
)

func celVars() map[string]any {
	return map[string]any{
		"parameters": map[string]any{"replicas": int64(3), "name": "shop", "ratio": 0.25, "on": true,
			"labels": map[string]any{"team": "web"}, "zones": []any{"a", "b"}},
		"component": map[string]any{"name": "example.com/shop", "version": "1.0.0", "labels": map[string]any{"channel": "stable"}},
		"resources": map[string]any{
			"image": map[string]any{"version": "6.7.0", "digest": "", "access": map[string]any{"type": "ociArtifact",
				"imageReference": "registry.internal.example:5000/mirror/stefanprodan/podinfo:6.7.0"}},
			"api-image": map[string]any{"access": map[string]any{"imageReference": "ghcr.io/x/api@sha256:" + strings.Repeat("a", 64)}},
		},
		"references": map[string]any{},
		"app":        map[string]any{"name": "shop", "namespace": "prod"},
		"cluster":    map[string]any{"kubeVersion": "1.31.0", "apiVersions": []any{}},
		"values":     map[string]any{},
	}
}

func TestTemplateTypes(t *testing.T) {
	e := &expr.Evaluator{}
	for _, tc := range []struct {
		in   string
		want any
	}{
		{"plain", "plain"},
		{"${parameters.replicas}", int64(3)},
		{"${parameters.replicas * 2}", int64(6)},
		{"${parameters.ratio}", 0.25},
		{"${parameters.on}", true},
		{"${parameters.labels}", map[string]any{"team": "web"}},
		{"${parameters.zones}", []any{"a", "b"}},
		{"${{'a': parameters.replicas, 'b': [1, 2.5]}}", map[string]any{"a": int64(3), "b": []any{int64(1), 2.5}}},
		{"${null}", nil},
		{"n=${parameters.replicas}, r=${parameters.ratio}, on=${parameters.on}", "n=3, r=0.25, on=true"},
		{"${parameters.labels} x", `{"team":"web"} x`},
		{"$${not an expression}", "${not an expression}"},
		{"${'}'}", "}"},
		{"${'a' + \"}\" + '''b'''}", "a}b"},
		{"${app.name}-${app.namespace}", "shop-prod"},
		{"${component.labels.channel}", "stable"},
		{"${resources.?missing.orValue('none')}", "none"},
		{"${'x'.upperAscii()}", "X"},
		{"${cluster.kubeVersion}", "1.31.0"},
	} {
		got, err := e.Template(context.Background(), "def.yaml: here", tc.in, celVars())
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s = %#v, want %#v", tc.in, got, tc.want)
		}
	}
}

// Image helpers: a registry with a port, digest-only and tag+digest references.
func TestImageFunctions(t *testing.T) {
	e := &expr.Evaluator{}
	digest := "sha256:" + strings.Repeat("a", 64)
	for _, tc := range []struct{ in, want string }{
		{"${image.registry(resources.image.access.imageReference)}", "registry.internal.example:5000"},
		{"${image.repository(resources.image.access.imageReference)}", "mirror/stefanprodan/podinfo"},
		{"${image.name(resources.image.access.imageReference)}", "registry.internal.example:5000/mirror/stefanprodan/podinfo"},
		{"${image.tag(resources.image.access.imageReference)}", "6.7.0"},
		{"${image.digest(resources.image.access.imageReference)}", ""},
		{"${resources.image.access.imageReference.toOCI().registry}", "registry.internal.example:5000"},
		{`${resources["api-image"].access.imageReference.toOCI().digest}`, digest},
		{`${image.tag(resources["api-image"].access.imageReference)}`, ""},
		{`${image.parse("ghcr.io/a/b:1.0@` + digest + `").reference}`, "ghcr.io/a/b:1.0@" + digest},
		{`${image.parse("ghcr.io/a/b:1.0@` + digest + `").tag}`, "1.0"},
		{`${image.parse("localhost:5000/b").registry}`, "localhost:5000"},
		{`${image.parse("nginx:1.27").name}`, "docker.io/library/nginx"},
		{`${image.parse("http://127.0.0.1:5078/ocm/x/y:0.1.0").name}`, "127.0.0.1:5078/ocm/x/y"},
		// toOCI() as OCM's controller CEL library: reference is the version
		// part; an access works as well as its reference.
		{"${resources.image.access.imageReference.toOCI().reference}", "6.7.0"},
		{`${resources["api-image"].access.imageReference.toOCI().reference}`, digest},
		{`${"ghcr.io/a/b:1.0@` + digest + `".toOCI().reference}`, "1.0@" + digest},
		{`${toOCI("ghcr.io/a/b:1.0").host}`, "ghcr.io"},
		{"${resources.image.access.toOCI().repository}", "mirror/stefanprodan/podinfo"},
		{"${toOCI(resources.image.access).tag}", "6.7.0"},
		{`${toOCI({"type": "localBlob/v1", "localReference": "sha256:x", "globalAccess": {"type": "ociArtifact", "imageReference": "ghcr.io/a/b:2"}}).registry}`, "ghcr.io"},
	} {
		got, err := e.Template(context.Background(), "def.yaml: here", tc.in, celVars())
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if got != tc.want {
			t.Errorf("%s = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// CEL errors carry the location and the expression, are bounded in time,
// and wrap a sentinel.
func TestTemplateErrors(t *testing.T) {
	e := &expr.Evaluator{Params: map[string]bool{"replicas": true, "name": true}, Resources: map[string]bool{"image": true}}
	for _, tc := range []struct {
		name, in string
		sentinel error
		mentions []string
	}{
		{"syntax", "${parameters.replicas +}", errdef.ErrInvalidInput, []string{"${parameters.replicas +}", "column", "Syntax error"}},
		{"unknown parameter", "${parameters.replica}", errdef.ErrInvalidInput, []string{`unknown parameter "replica"`, "column 11", "known: name, replicas"}},
		{"unknown resource", "${resources.imag.version}", errdef.ErrInvalidInput, []string{`unknown resource "imag"`, "known: image"}},
		{"unknown field at runtime", "${parameters.name.first}", errdef.ErrInvalidInput, []string{"${parameters.name.first}"}},
		{"missing key at runtime", "${component.labels.missing}", errdef.ErrInvalidInput, []string{"${component.labels.missing}", "no such key", "column"}},
		{"wrong type", "${parameters.replicas + 'x'}", errdef.ErrInvalidInput, []string{"${parameters.replicas + 'x'}", "no such overload", "+ applied to (int, string)"}},
		{"wrong member type", "${parameters.replicas.startsWith('x')}", errdef.ErrInvalidInput, []string{"no such overload", "startsWith applied to (int, string)"}},
		{"invalid image", "${image.tag('Not A Ref')}", errdef.ErrInvalidInput, []string{"Not A Ref", "image reference"}},
		{"toOCI of an access without a reference", `${toOCI({"type": "localBlob", "localReference": "sha256:x"}).host}`, errdef.ErrInvalidInput, []string{"toOCI", "no imageReference"}},
		{"toOCI of a number", "${toOCI(1).host}", errdef.ErrInvalidInput, []string{"toOCI", "got int"}},
		{"misspelt function", "${imgae.tag(resources.image.access.imageReference)}", errdef.ErrInvalidInput, []string{"undeclared reference to 'imgae'", "did you mean image.tag?"}},
		{"misspelt member function", "${resources.image.access.imageReference.toOIC().host}", errdef.ErrInvalidInput, []string{"did you mean toOCI?"}},
		{"unknown function", "${frobnicate(1)}", errdef.ErrInvalidInput, []string{"the plugin's functions: image.parse", "toOCI", "strings, lists, math and encoders"}},
		{"values outside patches", "${values.replicaCount}", errdef.ErrInvalidInput, []string{"no such", "values (the rendered values) is available only in patches"}},
		{"null inside a string", "x-${null}", errdef.ErrInvalidInput, []string{"null inside a string"}},
		{"bytes result", "${b'abc'}", errdef.ErrInvalidInput, []string{"bytes"}},
		{"unterminated", "a ${parameters.replicas", errdef.ErrInvalidInput, []string{"unterminated"}},
		{"empty", "${ }", errdef.ErrInvalidInput, []string{"empty expression"}},
		{"too long", "${" + strings.Repeat("1 + ", 2000) + "1}", errdef.ErrLimitExceeded, []string{"limit"}},
		{"cost limit", "${lists.range(20000).map(x, lists.range(20000).map(y, x * y))}", errdef.ErrLimitExceeded, []string{"lists.range(20000)", "cost limit"}},
		{"cost limit in a string", "${lists.range(100000).map(x, string(x)).join(',')}", errdef.ErrLimitExceeded, []string{"cost limit"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := e
			if strings.HasPrefix(tc.name, "cost limit") {
				// Only the cost limit may stop these (30 ms of work): under
				// load the 1 s default timeout once came first.
				ev = &expr.Evaluator{Params: e.Params, Resources: e.Resources, Timeout: 20 * time.Second}
			}
			var err error
			if cpu := testutil.CPUTime(func() {
				_, err = ev.Template(context.Background(), "def.yaml: spec.renders[0].values.a", tc.in, celVars())
			}); cpu > 5*time.Second {
				t.Errorf("took %s of CPU", cpu)
			}
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, tc.sentinel) {
				t.Errorf("%v is not %v", err, tc.sentinel)
			}
			var xe *expr.Error
			if !errors.As(err, &xe) {
				t.Errorf("not an *ExprError: %T", err)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "def.yaml: spec.renders[0].values.a: ") {
				t.Errorf("%q does not start with the location", msg)
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("message has several lines: %q", msg)
			}
			for _, m := range tc.mentions {
				if !strings.Contains(msg, m) {
					t.Errorf("%q lacks %q", msg, m)
				}
			}
		})
	}
}

// A slow expression under the cost limit still ends at the timeout.
func TestTemplateTimeout(t *testing.T) {
	e := &expr.Evaluator{CostLimit: 1 << 62, Timeout: 50 * time.Millisecond}
	var err error
	cpu := testutil.CPUTime(func() {
		_, err = e.Template(context.Background(), "here", "${lists.range(100000).map(x, lists.range(100000).map(y, x * y)).size()}", celVars())
	})
	if !errors.Is(err, errdef.ErrLimitExceeded) || !strings.Contains(err.Error(), "longer than 50ms") {
		t.Fatalf("got %v", err)
	}
	// At most the 50 ms the timeout gives it, and the interrupt check's
	// delay; CPU time, which a loaded machine does not stretch.
	if cpu > 3*time.Second {
		t.Fatalf("took %s of CPU", cpu)
	}
}

// The evaluator records every expression and its result for --explain.
func TestEvaluationsRecorded(t *testing.T) {
	e := &expr.Evaluator{}
	if _, err := e.Template(context.Background(), "w", "${parameters.replicas}-${app.name}", celVars()); err != nil {
		t.Fatal(err)
	}
	ev := e.Evaluations()
	if len(ev) != 2 || ev[0].Expr != "parameters.replicas" || ev[0].Result != int64(3) || ev[1].Result != "shop" {
		t.Fatalf("%+v", ev)
	}
}
