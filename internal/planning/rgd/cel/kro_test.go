package cel_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	krocel "github.com/kubernetes-sigs/kro/pkg/cel"
	"github.com/kubernetes-sigs/kro/pkg/cel/conversion"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/rgd/cel"
)

// vars is an instance as kro's controller reads it (integers int64, as
// the API server decodes JSON into unstructured objects) and a node.
func vars() map[string]any {
	return map[string]any{
		"schema": map[string]any{"metadata": map[string]any{"name": "demo", "namespace": "apps"},
			"spec": map[string]any{"name": "web", "replicas": int64(3), "ratio": 2.5, "ports": []any{int64(80), int64(443)},
				"labels": map[string]any{"a": "1", "b": "2"}, "enabled": true, "owner": map[string]any{"team": "core"}}},
		"config":  map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "web-config"}},
		"workers": []any{map[string]any{"metadata": map[string]any{"name": "w0"}}, map[string]any{"metadata": map[string]any{"name": "w1"}}},
	}
}

var ids = []string{"schema", "config", "workers"}

// kro declares resource ids as dynamic values and collections (forEach
// nodes) as lists.
var kroIDs, kroLists = []string{"schema", "config"}, []string{"workers"}

// kroEval evaluates an expression as kro's controller does: its
// DefaultEnvironment with the resource ids, compile, eval, then
// GoNativeType and EnsureJSONSafe (pkg/cel.Expression.Eval).
func kroEval(t *testing.T, x string) (any, error) {
	t.Helper()
	env, err := krocel.DefaultEnvironment(krocel.WithResourceIDs(kroIDs), krocel.WithListVariables(kroLists))
	if err != nil {
		t.Fatal(err)
	}
	ast, iss := env.Compile(x)
	if iss != nil && iss.Err() != nil {
		return nil, iss.Err()
	}
	prg, err := env.Program(ast)
	if err != nil {
		return nil, err
	}
	out, _, err := prg.Eval(vars())
	if err != nil {
		return nil, err
	}
	v, err := conversion.GoNativeType(out)
	if err != nil {
		return nil, err
	}
	return conversion.EnsureJSONSafe(v)
}

// kroExpressions covers every library of kro's environment, and the
// types of results (integers stay integers, doubles stay doubles).
var kroExpressions = map[string][]string{
	"core": {`schema.spec.replicas + 1`, `schema.spec.ratio * 2.0`, `type(schema.spec.replicas) == int`, `schema.spec.replicas / 2`,
		`double(schema.spec.replicas)`, `int(schema.spec.ratio)`, `schema.spec.name + "-x"`, `size(schema.spec.ports)`,
		`schema.spec.ports.map(p, p + 1)`, `has(schema.spec.labels.a)`, `schema.spec.labels.exists(k, k == "a")`, `1u + 2u`,
		`string(duration("90m"))`, `duration("1h30m")`, `timestamp("2026-01-02T03:04:05Z")`, `schema.spec.enabled ? "on" : "off"`,
		`schema.metadata.name + "/" + schema.metadata.namespace`, `config.metadata.name`, `workers.map(w, w.metadata.name)`,
		`schema.spec.ports.filter(p, p > 100)`, `{"a": schema.spec.replicas, "b": [schema.spec.ratio]}`, `schema.spec.owner`,
		`3.0`, `7 % 3`, `-schema.spec.replicas`, `schema.spec.ports[1]`, `"x" in schema.spec.labels`, `uint(3) == 3u`},
	"two-variable comprehensions": {`schema.spec.ports.transformList(i, p, p * i)`, `schema.spec.labels.transformMap(k, v, v + k)`,
		`schema.spec.ports.all(i, p, p > i)`, `schema.spec.labels.exists(k, v, v == "2")`, `schema.spec.ports.transformMapEntry(i, p, {string(p): i})`},
	"lists": {`[3, 1, 2].sort()`, `[[1], [2, 3]].flatten()`, `[1, 2, 2].distinct()`, `schema.spec.ports.slice(0, 1)`, `lists.range(3)`,
		`[1, 2].reverse()`, `["b", "a"].sortBy(x, x)`},
	"strings": {`"a,b".split(",")`, `["a", "b"].join("-")`, `"Hi".upperAscii()`, `"%s-%d".format(["a", 1])`, `strings.quote("x")`,
		`"abc".substring(1)`, `" x ".trim()`, `"abc".indexOf("b")`, `"aXa".replace("a", "b")`, `"abc".charAt(1)`, `"Ab".lowerAscii()`,
		`"abc".reverse()`},
	"bindings":       {`cel.bind(x, schema.spec.replicas * 2, x + x)`},
	"optional types": {`schema.spec.?missing.orValue("d")`, `optional.of(1).value()`, `schema.spec.labels[?"a"].orValue("z")`, `schema.spec.?name`},
	"encoders":       {`base64.encode(b"hi")`, `string(base64.decode("aGk="))`},
	"kubernetes lists": {`[1, 2, 3].isSorted()`, `[1, 2, 3].sum()`, `[1, 2, 3].max()`, `[1, 2, 3].indexOf(2)`, `[1, 2, 3].lastIndexOf(3)`,
		`[1, 2, 3].min()`, `[1.5, 2.0].sum()`},
	"urls": {`url("https://example.com:8080/p?q=1").getHost()`, `url("https://example.com:8080/p").getPort()`, `isURL("x")`,
		`url("https://example.com/p?q=1").getQuery()`, `url("https://example.com/a/b").getEscapedPath()`},
	"regex":      {`"abc123".find("[0-9]+")`, `"a1b2".findAll("[0-9]")`, `"abc".matches("^a")`},
	"quantity":   {`quantity("1Gi").asInteger()`, `quantity("500m").isLessThan(quantity("1"))`, `isQuantity("1x")`, `quantity("1.5").asApproximateFloat()`},
	"ip":         {`ip("10.0.0.1").family()`, `isIP("::1")`, `ip("127.0.0.1").isLoopback()`, `string(ip("::1"))`},
	"cidr":       {`cidr("10.0.0.0/8").containsIP(ip("10.1.2.3"))`, `cidr("10.0.0.0/8").prefixLength()`, `string(cidr("10.1.0.0/8").masked())`},
	"semver":     {`semver("1.2.3").major()`, `semver("1.2.3").isLessThan(semver("1.10.0"))`, `isSemver("1.2")`, `semver("1.2.3").compareTo(semver("1.2.3"))`},
	"kro random": {`random.seededString(8, "seed")`, `random.seededInt(0, 100, "seed")`, `random.seededString(12, schema.metadata.name)`},
	"kro maps":   {`{"a": 1}.merge({"b": 2})`, `{"a": {"x": 1}}.deepMerge({"a": {"y": 2}})`, `schema.spec.labels.merge({"c": "3"})`},
	"kro json":   {`json.marshal({"a": 1, "b": [true, "x"]})`, `json.unmarshal("{\"a\": 1, \"b\": 2.5}")`, `json.marshal(schema.spec.ports)`},
	"kro hash":   {`base64.encode(hash.sha256("x"))`, `base64.encode(hash.fnv64a("x"))`, `base64.encode(hash.md5("x"))`, `size(hash.sha256("x"))`},
	"kro lists":  {`lists.setAtIndex([1, 2, 3], 1, 9)`, `lists.insertAtIndex([1, 2], 0, 0)`, `lists.removeAtIndex([1, 2, 3], 0)`},
}

// TestSameAsKro: every expression evaluates in the plugin's sandbox to
// the value, with the Go type, that kro's own environment gives.
func TestSameAsKro(t *testing.T) {
	ev := cel.Limits{}.Evaluator(ids)
	for lib, xs := range kroExpressions {
		for _, x := range xs {
			t.Run(lib+"/"+x, func(t *testing.T) {
				want, err := kroEval(t, x)
				if err != nil {
					t.Fatalf("kro refuses the expression (fix the table): %v", err)
				}
				got, err := ev.Template(context.Background(), "test", "${"+x+"}", vars())
				if err != nil {
					t.Fatalf("kro gives %#v, the plugin fails: %v", want, err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("kro gives %s, the plugin %s", typed(want), typed(got))
				}
			})
		}
	}
}

// typed shows a value with the Go types of its leaves.
func typed(v any) string {
	switch v := v.(type) {
	case map[string]any:
		var parts []string
		for k, x := range v {
			parts = append(parts, k+": "+typed(x))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case []any:
		var parts []string
		for _, x := range v {
			parts = append(parts, typed(x))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return fmt.Sprintf("%T(%v)", v, v)
}

// TestSandboxHoldsForKroFunctions: kro's functions run inside the
// sandbox's cost limit.
func TestSandboxHoldsForKroFunctions(t *testing.T) {
	ev := cel.Limits{CostLimit: 10_000}.Evaluator(ids)
	for _, x := range []string{
		`lists.range(100000).map(i, hash.sha256(string(i)))`,
		`lists.range(5000).transformList(i, v, json.marshal(lists.range(50)))`,
	} {
		_, err := ev.Template(context.Background(), "test", "${"+x+"}", vars())
		if err == nil || !strings.Contains(err.Error(), "too much work") {
			t.Errorf("%s: want the cost limit, got %v", x, err)
		}
	}
}
