#!/usr/bin/env bash
# Runs every Go fuzz target of the module for FUZZTIME each (default 10s):
# the seed corpora always run in `go test`; this explores beyond them.
# A finding is written to the package's testdata/fuzz/ and fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZTIME="${FUZZTIME:-10s}"
status=0
while IFS=: read -r file fn; do
  pkg="./$(dirname "$file")"
  echo "fuzz: $pkg $fn ($FUZZTIME)"
  if ! go test -run='^$' -fuzz="^${fn}\$" -fuzztime="$FUZZTIME" "$pkg" >/tmp/fuzz.$$.log 2>&1; then
    cat /tmp/fuzz.$$.log; status=1
  else
    grep -E '^(ok|PASS)' /tmp/fuzz.$$.log | tail -1 || true
  fi
done < <(git ls-files '*_test.go' 2>/dev/null | grep -v '^test/\|^bench/' | xargs grep -o '^func Fuzz[A-Za-z0-9_]*' | sed 's/func //' | sort)
rm -f /tmp/fuzz.$$.log
exit $status
