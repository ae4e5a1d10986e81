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
//     missing token gets 403 before the body is read;
//   - bad input (unknown parameter, wrong JSON type, bad constraint or
//     pattern, unknown component, no matching version) gets 400 with
//     {"error": "…", "message": "…"} (Argo CD shows "message"); a failing
//     registry 502, a deadline 504, a full queue 503; never a stack;
//   - GET /healthz answers 200 "ok" without authentication.
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
