#!/usr/bin/env bash
# Runs every Go fuzz target of the module for FUZZTIME each (default 10s):
# the seed corpora always run in `go test`; this explores beyond them.
# A finding is written to the package's testdata/fuzz/ and fails the run.
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZTIME="${FUZZTIME:-10s}"
targets=$( (git ls-files '*_test.go' 2>/dev/null || find . -name '*_test.go' | sed 's|^\./||') | grep -v '^test/\|^bench/' | xargs grep -o '^func Fuzz[A-Za-z0-9_]*' | sed 's/func //' | sort || true)
# None found (no git, a moved tree) would pass having fuzzed nothing: say so and fail.
[ -n "$targets" ] || { echo "fuzz: no fuzz targets found"; exit 1; }
echo "fuzz: $(echo "$targets" | wc -l) targets"
status=0
while IFS=: read -r file fn; do
  pkg="./$(dirname "$file")"
  echo "fuzz: $pkg $fn ($FUZZTIME)"
  for attempt in 1 2; do
    if go test -run='^$' -fuzz="^${fn}\$" -fuzztime="$FUZZTIME" -fuzzminimizetime=1s -parallel=2 "$pkg" >/tmp/fuzz.$$.log 2>&1; then
      grep -E '^(ok|PASS)' /tmp/fuzz.$$.log | tail -1 || true
      break
    fi
    # Go's fuzzer can stop with "context deadline exceeded" when fuzztime ends
    # while it minimises a new (non-failing) input: no finding, no crasher file.
    # Retry that once; anything else is a finding (written to testdata/fuzz/).
    if [ "$attempt" = 1 ] && grep -q 'context deadline exceeded' /tmp/fuzz.$$.log && ! grep -q 'Failing input written' /tmp/fuzz.$$.log; then
      echo "fuzz: $fn stopped at the deadline while minimising; retrying once"
      continue
    fi
    cat /tmp/fuzz.$$.log; status=1
    break
  done
done <<<"$targets"
rm -f /tmp/fuzz.$$.log
exit $status
