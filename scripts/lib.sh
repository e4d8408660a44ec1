#!/usr/bin/env bash
# Shared by scripts/test.sh and scripts/demo.sh: get a fresh clone to "installed and built"
# with nothing but Node.js >= 20 and npm on the machine.

# pnpm 10 without corepack (its signature check fails on some machines): use one on PATH,
# else install it with npm, else run it through npx.
ensure_pnpm() {
  if command -v pnpm >/dev/null 2>&1 && [[ "$(pnpm --version 2>/dev/null)" == 10.* ]]; then
    PNPM=(pnpm)
  elif npm install -g pnpm@10 >/dev/null 2>&1 && command -v pnpm >/dev/null 2>&1 &&
    [[ "$(pnpm --version 2>/dev/null)" == 10.* ]]; then
    PNPM=(pnpm)
  else
    PNPM=(npx --yes pnpm@10)
  fi
  echo "using pnpm $("${PNPM[@]}" --version)"
}

install_and_build() {
  ensure_pnpm
  "${PNPM[@]}" install --frozen-lockfile --reporter=append-only
  "${PNPM[@]}" -r --filter './packages/*' run build
}

# The suites start their own redis-server processes (a single server, restarts, a cluster, and
# Sentinel: `redis-server <conf> --sentinel`, the same binary, no redis-sentinel package), so
# the binary is needed even when REDIS_URL points the main suite at an existing server.
ensure_redis_server() {
  if command -v "${REDIS_SERVER_BIN:-redis-server}" >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1; then
    return 0
  fi
  if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null 2>&1; then
    echo "redis-server not found: installing Debian's redis-server package"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
    return 0
  fi
  cat >&2 <<'MSG'
The tests need the redis-server and redis-cli binaries (the suite starts its own servers on
free ports; nothing is installed or changed system-wide by the tests).
  Debian/Ubuntu:  sudo apt-get install redis-server
  macOS:          brew install redis
  elsewhere:      https://redis.io/docs/latest/operate/oss_and_stack/install/
Or set REDIS_SERVER_BIN to a redis-server binary.
MSG
  exit 1
}
