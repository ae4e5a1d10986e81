#!/usr/bin/env python3
"""Semantic comparison of two multi-document YAML manifest streams (golden vs. rendered).

    hack/ocm-examples/compare.py GOLDEN RENDERED

Objects are matched by apiVersion/kind/namespace/name; order of documents, key order, quoting and
comments do not matter. Prints "match" or one line per difference; exit 0 on match, 1 otherwise.
"""
import sys

import yaml


def load(path):
    with open(path) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    out = {}
    for d in docs:
        m = d.get("metadata") or {}
        key = (d.get("apiVersion"), d.get("kind"), m.get("namespace", ""), m.get("name"))
        out[key] = d
    return out


def diff(a, b, path, out):
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            p = f"{path}.{k}"
            if k not in a:
                out.append(f"{p}: only in rendered: {b[k]!r}")
            elif k not in b:
                out.append(f"{p}: only in golden: {a[k]!r}")
            else:
                diff(a[k], b[k], p, out)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            diff(x, y, f"{path}[{i}]", out)
    elif a != b:
        out.append(f"{path}: golden {a!r} != rendered {b!r}")


def main():
    g, r = load(sys.argv[1]), load(sys.argv[2])
    out = []
    for k in sorted(set(g) | set(r), key=str):
        name = "/".join(str(x) for x in k if x)
        if k not in r:
            out.append(f"{name}: missing in rendered")
        elif k not in g:
            out.append(f"{name}: extra in rendered")
        else:
            diff(g[k], r[k], name, out)
    print("\n".join(out) if out else "match")
    return 1 if out else 0


if __name__ == "__main__":
    sys.exit(main())
