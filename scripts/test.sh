#!/usr/bin/env bash
# `npm test`: installs, builds, checks and runs every test (unit, both stores, Redis, cluster,
# adapters, examples). Extra arguments go to jest, e.g. `npm test -- packages/core`.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

install_and_build
ensure_redis_server

echo "== generated scripts are up to date with lua/"
node scripts/generate-lua.mjs --check
echo "== lint and format (biome)"
"${PNPM[@]}" exec biome ci --colors=off .
echo "== dependency rules (no import cycles, layers in order)"
node scripts/dependency-rules.mjs
echo "== type check"
"${PNPM[@]}" exec tsc -p tsconfig.json --noEmit
echo "== tests (jest)"
mkdir -p .tmp
status=0
"${PNPM[@]}" exec jest --ci --json --outputFile=.tmp/jest-results.json "$@" || status=$?
node -e '
  const r = require("./.tmp/jest-results.json");
  const failed = r.numFailedTests + r.numRuntimeErrorTestSuites;
  console.log(`tests: ${r.numPassedTests} passed, ${failed} failed` + (r.numPendingTests ? `, ${r.numPendingTests} skipped` : ""));
' || true
if [[ "$status" == 0 ]]; then
  echo "== docs/compatibility.md matches the client matrix's results"
  node scripts/compatibility.mjs --check || status=$?
fi
exit "$status"
