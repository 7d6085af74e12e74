#!/bin/sh
# Compare a benchmark at the pull request's base commit with the checked-out head and
# fail on a regression: the measuring step of examples/ci/assay-pr.yml, also runnable
# by hand in any git repository:
#
#   ASSAY_BASE=origin/main ASSAY_BENCH=bench/run.sh examples/ci/compare-base-head.sh
#
# Settings (environment):
#   ASSAY_BASE       the commit to hold the head against (a ref or a SHA; required)
#   ASSAY_BENCH      the benchmark, a path relative to the repository root (required);
#                    it runs with the tree it belongs to as its working directory
#   ASSAY_BUILD      a shell command that builds the benchmark, run in both trees
#                    (optional; it is your repository's own command)
#   ASSAY_THRESHOLD  the regression that fails the job (default 5%)
#   ASSAY_OUT        where the store, result.json, summary.md and report.html go
#                    (default assay-out)
#   ASSAY_ARGS       more options for 'assay compare', split on spaces (e.g. "-r 60")
#
# Exit status: assay's (0 not worse, 1 worse beyond the threshold, 5 undecided: the
# interval straddles the threshold, 2/3/4 a usage, store or benchmark problem).
set -eu

: "${ASSAY_BASE:?set ASSAY_BASE to the base commit}"
: "${ASSAY_BENCH:?set ASSAY_BENCH to the benchmark path}"
threshold=${ASSAY_THRESHOLD:-5%}
out=${ASSAY_OUT:-assay-out}
head=$(git rev-parse --show-toplevel)

umask 077  # the worktree and the results are this user's
mkdir -p "$out"
base_tree=$(mktemp -d)
cleanup() { git -C "$head" worktree remove --force "$base_tree" 2>/dev/null || rm -rf "$base_tree"; }
trap cleanup EXIT INT TERM
git -C "$head" worktree add --quiet --detach "$base_tree" "$ASSAY_BASE"

if [ -n "${ASSAY_BUILD:-}" ]; then
    (cd "$base_tree" && sh -c "$ASSAY_BUILD")
    (cd "$head" && sh -c "$ASSAY_BUILD")
fi

status=0
# shellcheck disable=SC2086  # ASSAY_ARGS is split on purpose
assay compare --store "$out/bench.assay.db" --fresh \
    --name base --name head --fail-if-worse "$threshold" \
    --json "$out/result.json" --markdown "$out/summary.md" --report "$out/report.html" \
    ${ASSAY_ARGS:-} \
    -- sh -c 'cd "$1" && exec "./$2"' base "$base_tree" "$ASSAY_BENCH" \
    -- sh -c 'cd "$1" && exec "./$2"' head "$head" "$ASSAY_BENCH" || status=$?
exit "$status"
