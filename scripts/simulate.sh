#!/bin/sh
# The seeded simulation (crates/core/tests/simulation) on new seeds: the real engine, its SQLite
# store and real run processes driven through clock jumps, suspends, DST, killed and doubled
# engines, edited and broken routine files and settings, accounts at their limits and revoked,
# receivers down and the database locked, every promise checked after each step. A failure prints
# its seed, step and promise, keeps the home, and replays with the same --seed (the same steps).
#
#   scripts/simulate.sh                         one new seed, a simulated year
#   scripts/simulate.sh --seed 42 --days 730    that seed (a replay), two simulated years
#   scripts/simulate.sh --minutes 30            new seeds one after another for 30 minutes
#   scripts/simulate.sh --routines 200          a bigger home (default 50)
#
# Each seed prints its simulated days per second. Exit 1 at the first broken promise.
set -eu
cd "$(dirname "$0")/.."
. scripts/lib.sh
need_cargo
SEED="" DAYS=365 ROUTINES=50 MINUTES=""
while [ $# -gt 0 ]; do
  case "$1" in
    --seed) SEED=${2:?--seed needs a number}; shift 2 ;;
    --days) DAYS=${2:?--days needs a number}; shift 2 ;;
    --routines) ROUTINES=${2:?--routines needs a number}; shift 2 ;;
    --minutes) MINUTES=${2:?--minutes needs a number}; shift 2 ;;
    *) echo "scripts/simulate.sh: unknown argument $1 (see the comment at its top)" >&2; exit 2 ;;
  esac
done
# The test profile scripts/test.sh builds: the pace is set by the store and the run processes (most of
# a step is SQLite and fork/exec), not by optimization.
cargo test --locked -p nightshift-core --test simulation --no-run
simulate() { # SEED: one seed's simulation (the test exits non-zero at a broken promise)
  SIM_SEED=$1 SIM_DAYS=$DAYS SIM_ROUTINES=$ROUTINES cargo test --locked -q -p nightshift-core --test simulation -- --ignored --exact explore --nocapture
}
if [ -n "$SEED" ]; then
  simulate "$SEED"
  exit
fi
END=""
[ -n "$MINUTES" ] && END=$(( $(date +%s) + MINUTES * 60 ))
while :; do
  SEED=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
  simulate "$SEED" || { echo "seed $SEED broke a promise: replay with scripts/simulate.sh --seed $SEED --days $DAYS --routines $ROUTINES" >&2; exit 1; }
  { [ -z "$END" ] || [ "$(date +%s)" -ge "$END" ]; } && break
done
