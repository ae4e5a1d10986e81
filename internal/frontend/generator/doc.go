// Package generator is Argo CD's ApplicationSet plugin generator for OCM
// component versions: an HTTP service that answers the ApplicationSet
// controller's POST /api/v1/getparams.execute with one parameter set per
// selected component version (or per component reference of a platform),
// each pinned to an exact version and descriptor digest.
//
// Why pinned: an Application whose plugin parameter is a constraint ("~2.3")
// goes stale, because Argo CD caches generated manifests per git revision;
// an Application generated with the exact version changes (or appears) when
// a new matching version is pushed, so Argo CD renders it anew.
//
// Contract (exactly Argo CD's, see applicationset/services/plugin):
//   - request {"applicationSetName": "…", "input": {"parameters": {…}}},
//     response {"output": {"parameters": [{…}, …]}};
//   - "Authorization: Bearer <token>", compared in constant time; a wrong or
//     missing token gets 403 from the headers alone, at once, and the
//     connection is closed (the body is never read or waited for);
//   - what the request can change gets 400 with {"error": "…", "message":
//     "…"} (Argo CD shows "message"): bad input (unknown parameter, wrong
//     JSON type, bad constraint or pattern), an unknown component or no
//     matching version, a bound below exceeded, a refusal of the sidecar
//     policy (errdef.ErrForbidden, ErrNotAllowed, ErrInsecure), a component
//     reference cycle; a failing registry 502, the deadline 504, no turn 503
//     with Retry-After; never a stack, messages at most 1 KiB;
//   - GET /healthz answers 200 "ok" without authentication.
//
// Bounds (one process serves every ApplicationSet, and every ApplicationSet
// author is a possible attacker):
//   - at most MaxEntries (5000) parameter sets, counted as they are built:
//     a platform whose references fan out is refused at the 5001st, not
//     after billions were listed; a few MiB per request at most;
//   - the versions a request selects are checked against MaxEntries before
//     any descriptor is looked up, and it looks up at most MaxLookups (5000)
//     distinct component versions (signature candidates and references
//     included);
//   - lookups run Options.Parallelism at a time; the first failure or the
//     deadline (Handler.RequestTimeout, waiting for a turn included) stops
//     them and cancels those under way;
//   - Handler.MaxConcurrent requests are served at once, at most one per
//     ApplicationSet name: another request of a name that has one served or
//     waiting gets 503 at once, so one ApplicationSet cannot take the turns
//     of others (N hostile ApplicationSets still hold N turns, each for at
//     most the request timeout).
//
// No match is an error, not an empty list: an empty list makes the
// ApplicationSet controller delete every Application it generated, which a
// typo or a registry hiccup must never do.
//
// Caching (the controller polls every requeueAfterSeconds, and a matrix
// asks for the same component once per cluster): version lists and
// component lists live for Options.ListTTL (default DefaultListTTL), a
// version's descriptor digest and what the entries need of its descriptor
// for Options.VersionTTL (default DefaultVersionTTL; OCM versions are
// immutable, a version overwritten in place is seen after at most that), and
// signature verifications by descriptor digest as long as the process. Warm,
// a request costs at most one registry request per component (its tag list).
package generator
