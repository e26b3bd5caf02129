#!/bin/sh
# GridSteer's container entrypoint (infra/docker/Dockerfile installs it as
# /usr/local/bin/gridsteer-entrypoint). POSIX sh.
#
#   gridsteer-entrypoint [serve] [SERVE OPTIONS]
#       Checks the configuration (gridsteer check-config: its problems, one per line, and
#       exit 1 when it has any), then replaces itself with the server (exec), so that the
#       server is the container's main process and receives SIGTERM (stop) and SIGHUP
#       (reload) itself. SERVE OPTIONS go to `gridsteer serve` (--workers, --log-level, …).
#   gridsteer-entrypoint healthcheck [PATH]
#       GET PATH (default /healthz; /readyz for readiness) from the HTTP API; exit 0 on a 2xx
#       answer, 1 otherwise. Prints the answer (docker inspect shows it).
#   gridsteer-entrypoint check-config|explain|status|drain|undrain|force|freeze|preview|
#                        simulate|token-hash|version [ARGS]
#       Runs that gridsteer command (the operating commands ask this container's API).
#   gridsteer-entrypoint COMMAND [ARGS]
#       Runs anything else as is (e.g. sh, for a look inside).
#
# Environment (the image sets the defaults marked *):
#   GRIDSTEER_HOME         * /app: where package.json, dist/ and node_modules/ are
#   GRIDSTEER_CONFIG       * /etc/gridsteer/gridsteer.yaml (serve --config FILE wins)
#   GRIDSTEER_DNS_LISTEN   * 0.0.0.0:53: DNS addresses, separated by spaces or commas
#                            (serve --dns-listen; dns.listen of the file is not used)
#   GRIDSTEER_HTTP_LISTEN  * 0.0.0.0:8053: the HTTP API (serve --http-listen)
#   GRIDSTEER_WORKERS        DNS worker processes: a number or auto (serve --workers;
#                            default: workers of the file)
#   GRIDSTEER_LOG_LEVEL      fatal|error|warn|info|debug|trace|silent (serve --log-level)
#   GRIDSTEER_HEALTHCHECK_URL  the API's base URL for healthcheck (default: from
#                            GRIDSTEER_HTTP_LISTEN, a wildcard address read as loopback)
#   CACHE_DIRECTORY        * /var/cache/gridsteer: the geo cache (read by the server)
#   GRIDSTEER_TOKENS, GRIDSTEER_NODE, a drain hook's tokenEnv …: read by the server itself.
# A variable set but empty counts as unset. An option given on the command line wins over
# its variable.
set -eu

GRIDSTEER_HOME=${GRIDSTEER_HOME:-/app}
GRIDSTEER_CONFIG=${GRIDSTEER_CONFIG:-/etc/gridsteer/gridsteer.yaml}
export GRIDSTEER_CONFIG
cli=$GRIDSTEER_HOME/dist/gslb/cli/main.js

say() {
  printf 'gridsteer-entrypoint: %s\n' "$*" >&2
}

# The HTTP API's base URL: GRIDSTEER_HEALTHCHECK_URL, else http://<GRIDSTEER_HTTP_LISTEN>
# with 0.0.0.0 read as 127.0.0.1 and [::] as [::1].
api_url() {
  if [ -n "${GRIDSTEER_HEALTHCHECK_URL:-}" ]; then
    printf '%s' "${GRIDSTEER_HEALTHCHECK_URL%/}"
    return
  fi
  listen=${GRIDSTEER_HTTP_LISTEN:-127.0.0.1:8053}
  host=${listen%:*}
  port=${listen##*:}
  case $host in
    '' | 0.0.0.0) host=127.0.0.1 ;;
    '[::]') host='[::1]' ;;
  esac
  printf 'http://%s:%s' "$host" "$port"
}

# has_opt NAME ARGS…: whether ARGS hold NAME or NAME=…
has_opt() {
  name=$1
  shift
  for a in "$@"; do
    case $a in
      "$name" | "$name"=*) return 0 ;;
    esac
  done
  return 1
}

# Node must start: the image's node binary carries a file capability, and the kernel refuses
# to run it when the container's bounding set lacks that capability.
check_node() {
  if ! out=$(node --version 2>&1); then
    say "cannot run node: ${out:-no output}"
    say "the image's node binary has the file capability cap_net_bind_service (to bind port 53"
    say "as a non-root user); the kernel refuses to run it without CAP_NET_BIND_SERVICE in the"
    say "container's capability set: keep it (--cap-add NET_BIND_SERVICE after --cap-drop ALL)"
    say "or build the image with --build-arg NET_BIND=sysctl (see infra/README.md)"
    exit 126
  fi
}

serve() {
  # serve --config FILE wins over GRIDSTEER_CONFIG, for the check as well.
  prev=
  for a in "$@"; do
    [ "$prev" = --config ] && GRIDSTEER_CONFIG=$a
    case $a in --config=*) GRIDSTEER_CONFIG=${a#--config=} ;; esac
    prev=$a
  done
  export GRIDSTEER_CONFIG

  check_node
  if [ ! -r "$GRIDSTEER_CONFIG" ]; then
    say "no readable configuration at $GRIDSTEER_CONFIG: mount your configuration folder"
    say "(gridsteer.yaml and regions/) at /etc/gridsteer, or set GRIDSTEER_CONFIG"
    exit 1
  fi
  # check-config's "ok …" goes to stderr: stdout carries the server's JSON log lines only.
  if ! node "$cli" check-config >&2; then
    say "the configuration $GRIDSTEER_CONFIG has problems (above); not starting"
    exit 1
  fi
  cache=${CACHE_DIRECTORY:-}
  cache=${cache%%:*}
  if [ -n "$cache" ] && { [ ! -d "$cache" ] || [ ! -w "$cache" ]; }; then
    say "warning: the geo cache $cache is not a folder writable by uid $(id -u): no geo table"
    say "can be compiled there (clients stay at the default location); mount a volume there"
    say "owned by uid $(id -u)"
  fi

  # Environment → serve options (unless the same option was given). No globbing: [::]:53 is
  # an address, not a pattern.
  set -f
  if [ -n "${GRIDSTEER_DNS_LISTEN:-}" ] && ! has_opt --dns-listen "$@"; then
    for addr in $(printf '%s' "$GRIDSTEER_DNS_LISTEN" | tr ',' ' '); do
      set -- "$@" --dns-listen "$addr"
    done
  fi
  if [ -n "${GRIDSTEER_HTTP_LISTEN:-}" ] && ! has_opt --http-listen "$@"; then
    set -- "$@" --http-listen "$GRIDSTEER_HTTP_LISTEN"
  fi
  if [ -n "${GRIDSTEER_WORKERS:-}" ] && ! has_opt --workers "$@"; then
    set -- "$@" --workers "$GRIDSTEER_WORKERS"
  fi
  if [ -n "${GRIDSTEER_LOG_LEVEL:-}" ] && ! has_opt --log-level "$@"; then
    set -- "$@" --log-level "$GRIDSTEER_LOG_LEVEL"
  fi
  exec node --enable-source-maps "$cli" serve "$@"
}

healthcheck() {
  url=$(api_url)${1:-/healthz}
  # shellcheck disable=SC2016 # JavaScript, not shell
  exec node -e '
const url = process.argv[1];
fetch(url, { signal: AbortSignal.timeout(4000) }).then(
  async (r) => {
    const body = (await r.text()).slice(0, 2000);
    console.log(`${url}: HTTP ${r.status} ${body}`);
    process.exit(r.ok ? 0 : 1);
  },
  (e) => {
    console.log(`${url}: ${e.cause?.code ?? e.message}`);
    process.exit(1);
  },
);' "$url"
}

[ $# -eq 0 ] && set -- serve
case $1 in
  serve)
    shift
    serve "$@"
    ;;
  -*)
    serve "$@"
    ;;
  healthcheck)
    shift
    healthcheck "$@"
    ;;
  check-config | explain | status | drain | undrain | force | freeze | preview | simulate | token-hash | version)
    # The operating commands ask this container's API unless told otherwise.
    GRIDSTEER_SERVER=${GRIDSTEER_SERVER:-$(api_url)}
    export GRIDSTEER_SERVER
    exec node "$cli" "$@"
    ;;
  *)
    exec "$@"
    ;;
esac
