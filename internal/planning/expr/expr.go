package expr

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/ext"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/suggest"
)

// Limits of expression evaluation.
const (
	// DefaultCostLimit bounds the work of one expression (CEL's cost units,
	// roughly one per operation or per element touched).
	DefaultCostLimit = 100_000
	// DefaultExprTimeout bounds the wall time of one expression.
	DefaultExprTimeout = time.Second
	// MaxExpressionLength bounds the text of one expression.
	MaxExpressionLength = 4096
	maxRangeSize        = 100_000
	maxResultSize       = 1 << 20 // bytes of a result rendered as JSON
)

// Variables available to expressions. "values" exists only in patches.
const (
	VarParameters = "parameters"
	VarComponent  = "component"
	VarResources  = "resources"
	VarReferences = "references"
	VarApp        = "app"
	VarCluster    = "cluster"
	VarValues     = "values"
)

var (
	envOnce sync.Once
	celEnv  *cel.Env
	envErr  error
)

// environment is the one CEL environment: every variable a map of dynamic
// values, the standard library, the strings, lists, math and encoders
// extensions, optional values, and the image helpers.
func environment() (*cel.Env, error) {
	envOnce.Do(func() {
		opts := baseOptions()
		for _, v := range []string{VarParameters, VarComponent, VarResources, VarReferences, VarApp, VarCluster, VarValues} {
			opts = append(opts, cel.Variable(v, cel.MapType(cel.StringType, cel.DynType)))
		}
		celEnv, envErr = cel.NewEnv(opts...)
	})
	return celEnv, envErr
}

// baseOptions are the library of every environment: the standard library,
// the strings, lists, math and encoders extensions, optional values, and
// the image helpers.
func baseOptions() []cel.EnvOption {
	opts := []cel.EnvOption{
		cel.OptionalTypes(),
		cel.CrossTypeNumericComparisons(true),
		cel.ParserExpressionSizeLimit(MaxExpressionLength),
		cel.ParserRecursionLimit(100),
		ext.Strings(),
		ext.Lists(ext.ListsMaxRangeSize(maxRangeSize)),
		ext.Math(),
		ext.Encoders(),
	}
	return append(opts, imageFunctions()...)
}

// Library is the functions of an environment: Name keys the environments
// kept for reuse, Options declare them.
type Library struct {
	Name    string
	Options func() []cel.EnvOption
	// Native, when set, converts results as that engine does (else as the
	// definitions do); results stay bounded in depth and size.
	Native func(ref.Val) (any, error)
}

// sandboxOptions bound every environment's parser, whatever its library.
func sandboxOptions() []cel.EnvOption {
	return []cel.EnvOption{cel.ParserExpressionSizeLimit(MaxExpressionLength), cel.ParserRecursionLimit(100)}
}

// Evaluation is one evaluated expression, for reports.
type Evaluation struct {
	Where  string // "<source>: <field path>"
	Expr   string
	Result any
}

// Error is a failed expression: where it is, its text, and why.
type Error struct {
	Where  string // definition source and field path
	Expr   string
	Column int // 1-based column inside the expression, 0 when unknown
	Msg    string
	Err    error // errdef sentinel
}

func (e *Error) Error() string {
	at := ""
	if e.Column > 0 {
		at = fmt.Sprintf(" (column %d)", e.Column)
	}
	return fmt.Sprintf("%s: expression ${%s}%s: %s", e.Where, errdef.Cut(e.Expr), at, e.Msg)
}

func (e *Error) Unwrap() error { return e.Err }

// Evaluator evaluates ${…} templates against one set of variables.
type Evaluator struct {
	CostLimit uint64
	Timeout   time.Duration
	// Params declared by the definition, for the static check of parameters.X.
	Params map[string]bool
	// Resources, References: the names that exist, for the static check.
	Resources, References map[string]bool
	// Variables, when set, replace the definition variables above with
	// these names (each a dynamic value): for formats of their own, such as
	// kro's ResourceGraphDefinitions (schema, resource and node ids). The
	// functions and the limits are the same.
	Variables []string
	// Library, with Variables, replaces the definitions' functions with
	// those of another engine (kro's CEL environment); the sandbox (cost
	// limit, deadline, result size, parser limits) stays.
	Library *Library

	mu       sync.Mutex
	programs map[string]cel.Program
	evals    []Evaluation
}

// Evaluations returns what was evaluated so far, in order.
func (e *Evaluator) Evaluations() []Evaluation {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Evaluation(nil), e.evals...)
}

type part struct {
	text   string
	expr   bool
	offset int // of the expression text in the template
}

// parseTemplate splits a string into literal text and ${…} expressions.
// "$${" is a literal "${".
func parseTemplate(s string) ([]part, error) {
	var parts []part
	var lit strings.Builder
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "$${"):
			lit.WriteString("${")
			i += 3
		case strings.HasPrefix(s[i:], "${"):
			end, err := exprEnd(s, i+2)
			if err != nil {
				return nil, err
			}
			if lit.Len() > 0 {
				parts = append(parts, part{text: lit.String()})
				lit.Reset()
			}
			parts = append(parts, part{text: s[i+2 : end], expr: true, offset: i + 2})
			i = end + 1
		default:
			lit.WriteByte(s[i])
			i++
		}
	}
	if lit.Len() > 0 {
		parts = append(parts, part{text: lit.String()})
	}
	return parts, nil
}

// exprEnd finds the } that closes an expression starting at start, skipping
// nested braces and string literals.
func exprEnd(s string, start int) (int, error) {
	depth := 0
	for j := start; j < len(s); j++ {
		switch c := s[j]; c {
		case '{':
			depth++
		case '}':
			if depth == 0 {
				return j, nil
			}
			depth--
		case '"', '\'':
			q := string(c)
			if strings.HasPrefix(s[j:], q+q+q) {
				q = q + q + q
			}
			raw := j > 0 && (s[j-1] == 'r' || s[j-1] == 'R')
			k := j + len(q)
			for ; k < len(s); k++ {
				if !raw && s[k] == '\\' {
					k++
					continue
				}
				if strings.HasPrefix(s[k:], q) {
					break
				}
			}
			if k >= len(s) {
				return 0, fmt.Errorf("unterminated string literal in ${…} starting at offset %d", start-2)
			}
			j = k + len(q) - 1
		}
	}
	return 0, fmt.Errorf("unterminated ${ at offset %d: no closing }", start-2)
}

// HasExpression reports whether s holds a ${…}.
func HasExpression(s string) bool {
	return strings.Contains(strings.ReplaceAll(s, "$${", ""), "${")
}

// Check compiles every expression of a template without evaluating it.
func (e *Evaluator) Check(where, s string) error {
	parts, err := parseTemplate(s)
	if err != nil {
		return &Error{Where: where, Expr: s, Msg: err.Error(), Err: errdef.ErrInvalidInput}
	}
	for _, p := range parts {
		if p.expr {
			if _, err := e.program(where, p.text); err != nil {
				return err
			}
		}
	}
	return nil
}

// Template evaluates a string. A string that is exactly one ${expr} yields
// the expression's value with its type (numbers stay numbers, maps stay
// maps); otherwise every expression is rendered as text into the string.
// Strings without ${ are returned as they are.
func (e *Evaluator) Template(ctx context.Context, where, s string, vars map[string]any) (any, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	parts, err := parseTemplate(s)
	if err != nil {
		return nil, &Error{Where: where, Expr: s, Msg: err.Error(), Err: errdef.ErrInvalidInput}
	}
	if len(parts) == 1 && parts[0].expr {
		return e.eval(ctx, where, parts[0].text, vars)
	}
	var b strings.Builder
	for _, p := range parts {
		if !p.expr {
			b.WriteString(p.text)
			continue
		}
		v, err := e.eval(ctx, where, p.text, vars)
		if err != nil {
			return nil, err
		}
		s, err := Stringify(v)
		if err != nil {
			return nil, &Error{Where: where, Expr: p.text, Msg: err.Error(), Err: errdef.ErrInvalidInput}
		}
		b.WriteString(s)
	}
	return b.String(), nil
}

// Walk evaluates every string in a value tree (maps, lists), returning a new tree.
func (e *Evaluator) Walk(ctx context.Context, where string, v any, vars map[string]any) (any, error) {
	switch v := v.(type) {
	case string:
		return e.Template(ctx, where, v, vars)
	case map[string]any:
		out := make(map[string]any, len(v))
		for _, k := range slices.Sorted(maps.Keys(v)) {
			r, err := e.Walk(ctx, joinKey(where, k), v[k], vars)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			r, err := e.Walk(ctx, fmt.Sprintf("%s[%d]", where, i), x, vars)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	}
	return v, nil
}

// CheckTree compiles every expression in a value tree.
func (e *Evaluator) CheckTree(where string, v any) error {
	switch v := v.(type) {
	case string:
		if strings.Contains(v, "${") {
			return e.Check(where, v)
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			if err := e.CheckTree(joinKey(where, k), v[k]); err != nil {
				return err
			}
		}
	case []any:
		for i, x := range v {
			if err := e.CheckTree(fmt.Sprintf("%s[%d]", where, i), x); err != nil {
				return err
			}
		}
	}
	return nil
}

// joinKey appends a map key to a field path, quoting keys that need it.
func joinKey(where, k string) string {
	if k != "" && !strings.ContainsAny(k, ".[]\"'") {
		return where + "." + k
	}
	return where + "[" + strconv.Quote(k) + "]"
}

func (e *Evaluator) program(where, expr string) (cel.Program, error) {
	e.mu.Lock()
	prg, ok := e.programs[expr]
	e.mu.Unlock()
	if ok {
		return prg, nil
	}
	fail := func(col int, sentinel error, format string, args ...any) error {
		return &Error{Where: where, Expr: expr, Column: col, Msg: fmt.Sprintf(format, args...), Err: sentinel}
	}
	if strings.TrimSpace(expr) == "" {
		return nil, fail(0, errdef.ErrInvalidInput, "empty expression")
	}
	if len(expr) > MaxExpressionLength {
		return nil, fail(0, errdef.ErrLimitExceeded, "the expression is %d characters, more than the limit of %d", len(expr), MaxExpressionLength)
	}
	env, err := e.environment()
	if err != nil {
		return nil, fail(0, errdef.ErrInvalidInput, "CEL environment: %v", err)
	}
	ast, iss := env.Compile(expr)
	if iss != nil && iss.Err() != nil {
		errs := iss.Errors()
		if len(errs) > 0 {
			first := errs[0]
			msgs := make([]string, 0, len(errs))
			for _, x := range errs {
				msgs = append(msgs, x.Message)
			}
			if hint := undeclaredHint(env, msgs); hint != "" {
				msgs = append(msgs, hint)
			}
			return nil, fail(first.Location.Column()+1, errdef.ErrInvalidInput, "%s", strings.Join(msgs, "; "))
		}
		return nil, fail(0, errdef.ErrInvalidInput, "%v", iss.Err())
	}
	if err := e.checkNames(ast); err != nil {
		return nil, &Error{Where: where, Expr: expr, Column: err.col, Msg: err.msg, Err: errdef.ErrInvalidInput}
	}
	prg, err = env.Program(ast, cel.CostLimit(e.costLimit()), cel.InterruptCheckFrequency(100), cel.EvalOptions(cel.OptOptimize))
	if err != nil {
		return nil, fail(0, errdef.ErrInvalidInput, "%v", err)
	}
	e.mu.Lock()
	if e.programs == nil {
		e.programs = map[string]cel.Program{}
	}
	e.programs[expr] = prg
	e.mu.Unlock()
	return prg, nil
}

func (e *Evaluator) costLimit() uint64 {
	if e.CostLimit == 0 {
		return DefaultCostLimit
	}
	return e.CostLimit
}

type nameError struct {
	col int
	msg string
}

// checkNames reports parameters.X, resources.X and references.X naming
// something that does not exist, before anything runs.
func (e *Evaluator) checkNames(ast *cel.Ast) *nameError {
	native := ast.NativeRep()
	nav := celast.NavigateAST(native)
	for _, sel := range celast.MatchDescendants(nav, celast.KindMatcher(celast.SelectKind)) {
		s := sel.AsSelect()
		op := s.Operand()
		if op.Kind() != celast.IdentKind {
			continue
		}
		var known map[string]bool
		what := ""
		switch op.AsIdent() {
		case VarParameters:
			known, what = e.Params, "parameter"
		case VarResources:
			known, what = e.Resources, "resource"
		case VarReferences:
			known, what = e.References, "component reference"
		default:
			continue
		}
		if known == nil || known[s.FieldName()] {
			continue
		}
		col := native.SourceInfo().GetStartLocation(sel.ID()).Column() + 1
		names := slices.Sorted(maps.Keys(known))
		list := "none"
		if len(names) > 0 {
			list = strings.Join(names, ", ")
		}
		return &nameError{col: col, msg: fmt.Sprintf("unknown %s %s (known: %s)", what, errdef.Quote(s.FieldName()), list)}
	}
	return nil
}

func (e *Evaluator) eval(ctx context.Context, where, expr string, vars map[string]any) (any, error) {
	prg, err := e.program(where, expr)
	if err != nil {
		return nil, err
	}
	timeout := e.Timeout
	if timeout <= 0 {
		timeout = DefaultExprTimeout
	}
	ectx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out, _, err := prg.ContextEval(ectx, vars)
	if err != nil {
		xe := &Error{Where: where, Expr: expr, Msg: err.Error(), Err: errdef.ErrInvalidInput}
		switch {
		case strings.Contains(err.Error(), "cost limit exceeded"):
			// What stopped it, even when the deadline has passed meanwhile
			// (a loaded machine).
			xe.Msg, xe.Err = "the expression does too much work: "+err.Error(), errdef.ErrLimitExceeded
		case errors.Is(ectx.Err(), context.DeadlineExceeded) && ctx.Err() == nil:
			xe.Msg, xe.Err = fmt.Sprintf("evaluation took longer than %s", timeout), errdef.ErrLimitExceeded
		case ctx.Err() != nil:
			xe.Msg, xe.Err = "evaluation interrupted: "+ctx.Err().Error(), ctx.Err()
		case usesEmptyValues(expr, vars, err):
			xe.Msg += "; " + VarValues + " (the rendered values) is available only in patches, not in definition values, config or localisation rules"
		}
		var ce *types.Err
		if errors.As(err, &ce) && ce.NodeID() != 0 {
			if ast, iss := e.mustEnv().Compile(expr); iss == nil || iss.Err() == nil {
				xe.Column = ast.NativeRep().SourceInfo().GetStartLocation(ce.NodeID()).Column() + 1
				if xe.Err == errdef.ErrInvalidInput && strings.Contains(err.Error(), "no such overload") {
					if operands := overloadOperands(ctx, e.mustEnv(), ast, ce.NodeID(), vars, e.costLimit(), timeout); operands != "" {
						xe.Msg += ": " + operands
					}
				}
			}
		}
		return nil, xe
	}
	v, err := e.native(out)
	if err != nil {
		return nil, &Error{Where: where, Expr: expr, Msg: err.Error(), Err: errdef.ErrInvalidInput}
	}
	if b, err := json.Marshal(v); err == nil && len(b) > maxResultSize {
		return nil, &Error{Where: where, Expr: expr, Msg: fmt.Sprintf("the result is %d bytes, more than %d", len(b), maxResultSize), Err: errdef.ErrLimitExceeded}
	}
	e.mu.Lock()
	e.evals = append(e.evals, Evaluation{Where: where, Expr: expr, Result: v})
	e.mu.Unlock()
	return v, nil
}

var valuesIdent = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(^|[^.\w])values\b`) })

// usesEmptyValues reports a lookup failing in an expression that reads
// values where values is empty: outside patches.
func usesEmptyValues(expr string, vars map[string]any, err error) bool {
	msg := err.Error()
	if !strings.Contains(msg, "no such key") && !strings.Contains(msg, "no such attribute") {
		return false
	}
	m, _ := vars[VarValues].(map[string]any)
	return len(m) == 0 && valuesIdent().MatchString(expr)
}

// overloadOperands names the function a "no such overload" error is about
// and the types of its operands ("_+_ applied to (int, string)"). It runs
// the expression again, on this error path only, tracking the value of every
// subexpression, within the same cost limit and timeout.
func overloadOperands(ctx context.Context, env *cel.Env, ast *cel.Ast, id int64, vars map[string]any, costLimit uint64, timeout time.Duration) string {
	native := ast.NativeRep()
	var call celast.CallExpr
	for _, n := range celast.MatchDescendants(celast.NavigateAST(native), celast.KindMatcher(celast.CallKind)) {
		if n.ID() == id {
			call = n.AsCall()
			break
		}
	}
	if call == nil {
		return ""
	}
	operands := call.Args()
	if call.IsMemberFunction() {
		operands = append([]celast.Expr{call.Target()}, operands...)
	}
	prg, err := env.Program(ast, cel.CostLimit(costLimit), cel.InterruptCheckFrequency(100), cel.EvalOptions(cel.OptTrackState))
	if err != nil {
		return ""
	}
	ectx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_, det, _ := prg.ContextEval(ectx, vars)
	if det == nil || det.State() == nil {
		return ""
	}
	names := make([]string, 0, len(operands))
	for _, o := range operands {
		v, ok := det.State().Value(o.ID())
		if !ok || v == nil {
			return ""
		}
		names = append(names, v.Type().TypeName())
	}
	fn := strings.TrimSuffix(strings.TrimPrefix(call.FunctionName(), "_"), "_")
	return fmt.Sprintf("%s applied to (%s)", fn, strings.Join(names, ", "))
}

// undeclaredHint answers "undeclared reference to 'X'" with the functions
// and variables of the environment closest to X (CEL reports a misspelt
// "imgae.tag" as two names, so the dotted join is compared too).
func undeclaredHint(env *cel.Env, msgs []string) string {
	const prefix = "undeclared reference to '"
	var names []string
	for _, m := range msgs {
		if i := strings.Index(m, prefix); i >= 0 {
			if n, _, ok := strings.Cut(m[i+len(prefix):], "'"); ok && len(n) <= 64 && len(names) < 8 {
				names = append(names, n)
			}
		}
	}
	if len(names) == 0 {
		return ""
	}
	if len(names) > 1 {
		names = append(names, strings.Join(names, "."))
	}
	known := []string{VarParameters, VarComponent, VarResources, VarReferences, VarApp, VarCluster, VarValues}
	for f := range env.Functions() {
		if !strings.HasPrefix(f, "_") && !strings.Contains(f, "@") {
			known = append(known, f)
		}
	}
	var close []string
	for _, k := range known {
		for _, n := range names {
			limit := 1
			if len(n) >= 4 {
				limit = max(2, len(n)/4)
			}
			if d := suggest.Distance(strings.ToLower(n), strings.ToLower(k)); d <= limit {
				close = append(close, k)
				break
			}
		}
	}
	sort.Strings(close)
	if len(close) > 0 {
		return "did you mean " + strings.Join(close, ", ") + "?"
	}
	return "the plugin's functions: image.parse, image.registry, image.repository, image.name, image.tag, image.digest, toOCI; " +
		"and CEL's standard library with the strings, lists, math and encoders extensions (docs/deployment-definition.md)"
}

func (e *Evaluator) mustEnv() *cel.Env {
	env, _ := e.environment()
	return env
}

// maxResultDepth bounds the nesting of a result.
const maxResultDepth = 100

// native converts a result with the library's conversion, else native.
func (e *Evaluator) native(v ref.Val) (any, error) {
	if e.Library == nil || e.Library.Native == nil {
		return native(v, 0)
	}
	out, err := e.Library.Native(v)
	if err != nil {
		return nil, err
	}
	if !depthWithin(out, maxResultDepth) {
		return nil, fmt.Errorf("the result is nested more than %d levels deep", maxResultDepth)
	}
	return out, nil
}

func depthWithin(v any, n int) bool {
	if n < 0 {
		return false
	}
	switch v := v.(type) {
	case map[string]any:
		for _, x := range v {
			if !depthWithin(x, n-1) {
				return false
			}
		}
	case []any:
		for _, x := range v {
			if !depthWithin(x, n-1) {
				return false
			}
		}
	}
	return true
}

// native converts a CEL value to a JSON-compatible Go value.
func native(v ref.Val, depth int) (any, error) {
	if depth > maxResultDepth {
		return nil, fmt.Errorf("the result is nested more than %d levels deep", maxResultDepth)
	}
	switch v := v.(type) {
	case types.Null:
		return nil, nil
	case types.Bool:
		return bool(v), nil
	case types.Int:
		return int64(v), nil
	case types.Uint:
		if uint64(v) > math.MaxInt64 {
			return float64(v), nil
		}
		return int64(v), nil
	case types.Double:
		f := float64(v)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("the result %v is not a finite number", f)
		}
		return f, nil
	case types.String:
		return string(v), nil
	case types.Bytes:
		return nil, fmt.Errorf("the result is bytes; convert it with base64.encode() or string()")
	case types.Duration:
		return v.Duration.String(), nil
	case types.Timestamp:
		return v.Time.UTC().Format(time.RFC3339Nano), nil
	case *types.Optional:
		if !v.HasValue() {
			return nil, nil
		}
		return native(v.GetValue(), depth+1)
	}
	switch v := v.(type) {
	case traits.Mapper:
		out := map[string]any{}
		it := v.Iterator()
		for it.HasNext() == types.True {
			k := it.Next()
			ks, ok := k.(types.String)
			if !ok {
				return nil, fmt.Errorf("the result is a map with a %s key; values need string keys", k.Type().TypeName())
			}
			e, err := native(v.Get(k), depth+1)
			if err != nil {
				return nil, err
			}
			out[string(ks)] = e
		}
		return out, nil
	case traits.Lister:
		var out []any
		it := v.Iterator()
		for it.HasNext() == types.True {
			e, err := native(it.Next(), depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, e)
		}
		if out == nil {
			out = []any{}
		}
		return out, nil
	}
	return nil, fmt.Errorf("the result has type %s, which has no YAML form", v.Type().TypeName())
}

// Stringify renders a value inside a string.
func Stringify(v any) (string, error) {
	switch v := v.(type) {
	case nil:
		return "", fmt.Errorf("the expression is null inside a string; use a whole-string ${…} to set null, or orValue()/?: to pick a default")
	case string:
		return v, nil
	case bool:
		return strconv.FormatBool(v), nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), nil
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return "", err
		}
		return string(b), nil
	}
}

// truncate keeps an expression short in messages.

// DescribeValue names the kind of a value for messages (a string shown
// truncated), e.g. `the number 3`, `a map`.
func DescribeValue(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		return fmt.Sprintf("the string %s", errdef.Quote(v))
	case bool:
		return fmt.Sprintf("the boolean %v", v)
	case int64, int, float64:
		return fmt.Sprintf("the number %v", v)
	case map[string]any:
		return "a map"
	case []any:
		return "a list"
	default:
		return fmt.Sprintf("%T", v)
	}
}
