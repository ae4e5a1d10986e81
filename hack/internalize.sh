#!/usr/bin/env bash
# Moves every Go package under plugin/ that is not in the public keep list to
# internal/ (same sub-path: plugin/render/helm -> internal/render/helm), then
# rewrites import paths and path mentions in every tracked text file of every
# module, and checks each module with gofmt -l, go build and go vet.
#
#   hack/internalize.sh [--dry-run] [--no-check] [plugin/pkg ...]
#
# Without arguments the keep list is KEEP below (the public API, docs/api.md).
# The packages to move are found, not listed: whatever appears under plugin/
# and is not kept moves, so new packages (plugin/transfer, plugin/engine, ...)
# need no change here. A kept package keeps its place even when its parent
# moves (plugin/ocm kept, plugin/ocm/ctf moved -> internal/ocm/ctf).
#
# Why internal/<sub-path> and not internal/plugin/<sub-path>: the depth of
# every directory stays the same, so the tests' relative paths to the
# repository's testdata ("../../testdata/demo/ctf") keep working. A target that
# already holds files (internal/docs, internal/fixtures, ...) is a clash: the
# script stops before it changes anything and names it.
#
# Idempotent: a second run finds nothing to move and no mention to rewrite.
# CHANGELOG.md history is left alone; one entry is added under Unreleased.
# Env: INTERNALIZE_MODULES (space-separated module dirs to check; default:
# every go.mod in the repository), GO (default go).
set -euo pipefail

KEEP_DEFAULT=(
  plugin/pipeline
  plugin/ocm
  plugin/errdef
  plugin/signing
  plugin/policy
)

die() { echo "internalize: $*" >&2; exit 1; }
log() { echo "internalize: $*"; }

dry=0 check=1 keep=()
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) dry=1 ;;
    --no-check) check=0 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown flag $1" ;;
    *) keep+=("${1%/}") ;;
  esac
  shift
done
[ ${#keep[@]} -gt 0 ] || keep=("${KEEP_DEFAULT[@]}")

GO="${GO:-go}"
root="$(git rev-parse --show-toplevel 2>/dev/null)" || die "not inside a git work tree"
cd "$root"
module="$(sed -n 's/^module //p' go.mod)"
[ -n "$module" ] || die "no module line in $root/go.mod"
[ -z "$(git status --porcelain --untracked-files=no)" ] || die "the work tree has uncommitted changes; commit or stash them first"
command -v perl >/dev/null || die "perl is required"

# Package directories: tracked directories holding .go files, outside testdata.
mapfile -t pkgs < <(git ls-files -- 'plugin/*.go' | grep -v '/testdata/' | xargs -r -n1 dirname | sort -u)
mapfile -t ipkgs < <(git ls-files -- 'internal/*.go' | grep -v '/testdata/' | xargs -r -n1 dirname | sort -u)

for k in "${keep[@]}"; do
  case "$k" in plugin/*) ;; *) die "keep list entry $k is not under plugin/" ;; esac
  printf '%s\n' "${pkgs[@]}" | grep -qxF "$k" || die "keep list entry $k is not a Go package under plugin/ (renamed? update KEEP_DEFAULT or the arguments)"
done

moved=()
for p in "${pkgs[@]}"; do
  printf '%s\n' "${keep[@]}" | grep -qxF "$p" || moved+=("$p")
done
log "public (kept): ${keep[*]}"
log "moving ${#moved[@]} package(s) to internal/"

count_exports() { "$GO" run ./hack/exportcount "$@"; }
if [ -d hack/exportcount ]; then
  before="$(count_exports -total plugin)" || die "hack/exportcount failed"
fi

# plan: file -> destination. A file moves with package P when its path below
# P does not pass through a subdirectory that is (or holds) another package.
plan="$(mktemp)"; trap 'rm -f "$plan" "$plan".*' EXIT
for p in "${moved[@]}"; do
  t="internal/${p#plugin/}"
  if printf '%s\n' "${ipkgs[@]}" | grep -qxF "$t"; then
    die "clash: $p would move to $t, which is already a package; rename one of them (or keep $p public)"
  fi
  while IFS= read -r f; do
    rel="${f#"$p"/}"
    if [[ "$rel" == */* ]]; then
      sub="$p/${rel%%/*}"
      if printf '%s\n' "${pkgs[@]}" | grep -qE "^${sub//./\\.}(/|\$)"; then continue; fi
    fi
    dst="$t/$rel"
    [ ! -e "$dst" ] || die "clash: $f would move to $dst, which exists"
    git ls-files --error-unmatch -- "$dst" >/dev/null 2>&1 && die "clash: $dst is tracked"
    printf '%s\t%s\n' "$f" "$dst" >>"$plan"
  done < <(git ls-files -- "$p/")
done

# Relative paths in moved Go files ("../testdata", "../../testdata/demo") must
# point at the same thing after the move. Depth is kept, so paths into the
# repository's testdata are fine; a path into a kept sibling is not.
printf '%s\n' "${moved[@]}" >"$plan.moved"
perl -e '
  use strict; use File::Spec;
  my %moved = map { chomp; ($_ => 1) } do { open my $m, "<", $ARGV[0] or die; <$m> };
  sub norm { my @o; for (split m{/}, $_[0]) { next if $_ eq "." || $_ eq ""; if ($_ eq "..") { die "above root\n" unless @o; pop @o } else { push @o, $_ } } join "/", @o }
  sub mapped { my $r = shift; my @s = split m{/}, $r;
    for (my $i = @s; $i > 0; $i--) { my $pre = join "/", @s[0..$i-1];
      if ($moved{$pre}) { (my $t = $pre) =~ s{^plugin/}{internal/}; return join "/", $t, @s[$i..$#s] } }
    return $r }
  my $bad = 0;
  open my $pl, "<", $ARGV[1] or die;
  while (my $line = <$pl>) { chomp $line; my ($f, $dst) = split /\t/, $line;
    next unless $f =~ /\.go$/;
    open my $fh, "<", $f or die "$f: $!"; my $n = 0;
    while (<$fh>) { $n++;
      while (/"((?:\.\.\/)+\w[\w.\/-]*)"/g) { my $lit = $1;
        (my $od = $f) =~ s{/[^/]*$}{}; (my $nd = $dst) =~ s{/[^/]*$}{};
        my ($old, $new) = eval { (norm("$od/$lit"), norm("$nd/$lit")) } or next;
        next unless -e $old;
        if (mapped($old) ne $new) { print STDERR "internalize: $f:$n: relative path \"$lit\" means $old now and $new after the move\n"; $bad = 1 } } } }
  exit $bad;
' "$plan.moved" "$plan" || die "relative paths above would break; make them relative to the repository root or move the packages together"

if [ "$dry" = 1 ]; then
  sort -o "$plan" "$plan"
  for p in "${moved[@]}"; do echo "  $p -> internal/${p#plugin/}"; done
  log "dry run: $(wc -l <"$plan") file(s) would move; nothing changed"
  exit 0
fi

while IFS=$'\t' read -r f dst; do
  mkdir -p "$(dirname "$dst")"
  git mv -- "$f" "$dst"
done <"$plan"
find plugin -depth -type d -empty -delete 2>/dev/null || true

# Rewrite mentions. Every package and container directory known before the
# move is in the table; a mention resolves to its longest known prefix and is
# rewritten only when that prefix moved (a container only when everything in
# it moved). "plugin/render/{helm,kustomize}" is expanded for the test.
printf '%s\n' "${pkgs[@]}" >"$plan.all"
mapfile -t files < <(git grep -lI -e 'plugin/' -- . \
  ':!CHANGELOG.md' ':!*go.sum' ':!*/testdata/fuzz/*' ':!hack/internalize.sh' ':!docs/api.md' ':!hack/exportcount/*' || true)
if [ ${#files[@]} -gt 0 ]; then
  INTERNALIZE_MOVED="$plan.moved" INTERNALIZE_ALL="$plan.all" perl -pi -e '
    BEGIN {
      sub rd { open my $h, "<", $_[0] or die "$_[0]: $!"; my @l = <$h>; chomp @l; @l }
      %M = map { ($_ => 1) } rd($ENV{INTERNALIZE_MOVED});
      for my $p (rd($ENV{INTERNALIZE_ALL})) { $K{$p} = "pkg"; my @s = split m{/}, $p;
        for my $i (2 .. $#s) { my $c = join "/", @s[0..$i-1]; $C{$c}{$p} = 1 } }
      sub state { my $p = shift;   # 1 moved, 0 public, -1 mixed container, undef unknown
        return $M{$p} ? 1 : 0 if exists $K{$p};
        return undef unless $C{$p};
        my @in = keys %{$C{$p}}; my $m = grep { $M{$_} } @in;
        return $m == @in ? 1 : $m == 0 ? 0 : -1 }
      sub rewrite { my ($path, $brace) = @_; my @s = split m{/}, $path;
        for (my $i = @s; $i >= 2; $i--) { my $pre = join "/", @s[0..$i-1]; my $st = state($pre);
          next unless defined $st;
          if ($brace ne "" && $i == @s) {
            my @names = split /,/, substr($brace, 2, -1);
            my @alt = map { state("$pre/$_") // 0 } @names;
            my $all = !grep { $_ != 1 } @alt; my $none = !grep { $_ != 0 } @alt;
            if (!$all && !$none && !grep { $_ < 0 } @alt) {   # split: moved ones first
              my @m = map { $names[$_] } grep { $alt[$_] == 1 } 0..$#names;
              my @k = map { $names[$_] } grep { $alt[$_] == 0 } 0..$#names;
              my $b = sub { @_ == 1 ? "/$_[0]" : "/{" . join(",", @_) . "}" };
              return "internal/" . substr($path, 7) . $b->(@m) . ", $path" . $b->(@k) }
            $st = $all ? 1 : $none ? 0 : -1 }
          if ($st < 0) { warn "internalize: $ARGV:$.: $pre$brace mixes moved and public packages; left as it is\n"; return "$path$brace" }
          return $st ? ("internal/" . substr($path, 7) . $brace) : "$path$brace" }
        return "$path$brace" }
    }
    s{(^|[^\w.\-/]|\./|argocd-ocm-plugin/)(plugin(?:/[A-Za-z0-9_]+)+)(/\{[A-Za-z0-9_,]+\})?}{$1 . rewrite($2, $3 // "")}ge;
    close ARGV if eof;
  ' "${files[@]}"
fi

# Changelog: one entry, once.
if [ ${#moved[@]} -gt 0 ] && ! grep -q 'internalize.sh' CHANGELOG.md; then
  entry="- Public Go API: only $(printf '`%s`, ' "${keep[@]}" | sed 's/, $//') stay importable (docs/api.md); every other package moved from \`plugin/\` to \`internal/\` with its sub-path (hack/internalize.sh)."
  entry="$(printf '%s\n' "$entry" | fold -s -w 110 | sed 's/ *$//; 2,$s/^/  /')"
  INTERNALIZE_ENTRY="$entry" perl -0pi -e '
    my $e = $ENV{INTERNALIZE_ENTRY};
    s{(## \[Unreleased\]\n.*?)(\n### Changed\n)}{$1$2$e\n}s or
    s{(## \[Unreleased\]\n(?:(?!\n## \[).)*?)(\n### (?!Added))}{$1\n### Changed\n$e\n$2}s or
    s{(## \[Unreleased\]\n(?:(?!\n## \[).)*)}{$1\n### Changed\n$e\n}s or die "no Unreleased section in CHANGELOG.md\n";
  ' CHANGELOG.md
  git add CHANGELOG.md
fi

# Container builds copy source directories by name: internal/ is now needed
# to build cmd/. Add it beside plugin/, once; any other form is for a person.
while IFS= read -r df; do
  if grep -qE '^COPY +plugin +\./plugin/?$' "$df"; then
    grep -qE '^COPY +internal +\./internal/?$' "$df" || perl -pi -e 's{^(COPY +plugin +\./plugin/?)$}{$1\nCOPY internal ./internal}' "$df"
  elif grep -qE '^(COPY|ADD)\b.*\bplugin\b' "$df"; then
    die "$df copies plugin/ in a form this script does not know; add internal/ by hand"
  fi
done < <(git ls-files -- 'Dockerfile' '*/Dockerfile' 'Dockerfile.*' '*/Dockerfile.*' '*.Dockerfile')

# gofmt sorts import blocks; internal/ sorts before plugin/.
mapfile -t gofiles < <(git ls-files -m -- '*.go'; git diff --cached --name-only --diff-filter=AMR -- '*.go')
if [ ${#gofiles[@]} -gt 0 ]; then gofmt -w "${gofiles[@]}"; fi

git add -u

# Anything left that names a moved package is a mention the rewrite missed.
left=0
for p in "${moved[@]}"; do
  pat="(^|[^A-Za-z0-9_./-]|\\./|argocd-ocm-plugin/)${p}([^A-Za-z0-9_/-]|\$)"
  if git grep -nIE "$pat" -- . ':!CHANGELOG.md' ':!*go.sum' ':!*/testdata/fuzz/*' ':!hack/internalize.sh' ':!docs/api.md' ':!hack/exportcount/*' 2>/dev/null; then left=1; fi
done
[ "$left" = 0 ] || die "mentions of moved packages are left (above)"
if git ls-files -- 'plugin/*.go' | grep -v '/testdata/' | xargs -r -n1 dirname | sort -u | grep -vxF -f <(printf '%s\n' "${keep[@]}"); then
  die "packages above are still under plugin/ but not in the keep list"
fi

if [ -d hack/exportcount ]; then
  after="$(count_exports -total plugin)" || die "hack/exportcount failed"
  log "exported names under plugin/: ${before:-?} before, $after after"
fi

[ "$check" = 1 ] || { log "done (checks skipped)"; exit 0; }
mapfile -t mods < <(if [ -n "${INTERNALIZE_MODULES:-}" ]; then printf '%s\n' $INTERNALIZE_MODULES; else git ls-files -- 'go.mod' '*/go.mod' | xargs -n1 dirname; fi)
for m in "${mods[@]}"; do
  log "checking module $m"
  unformatted="$(cd "$m" && gofmt -l . | grep -v '^vendor/' || true)"
  [ -z "$unformatted" ] || die "gofmt -l in $m: $unformatted"
  if [ -z "$(cd "$m" && "$GO" list ./... 2>/dev/null)" ]; then log "module $m has no packages to build (build-tagged tools only)"; continue; fi
  (cd "$m" && "$GO" build ./... && "$GO" vet ./...) || die "go build or go vet failed in module $m"
done
log "done: $(git status --porcelain | wc -l) path(s) changed; review with git status, commit with git commit"
