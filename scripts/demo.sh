#!/usr/bin/env bash
# `npm run demo`: installs and builds, then runs the Express example, fires a burst at it and
# prints what was allowed and denied. Uses the in-memory store, or Redis when REDIS_URL is set.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

install_and_build >/dev/null
"${PNPM[@]}" --silent --filter @floodgate/example-express run demo
