#!/usr/bin/env bash
# Starts or stops the reference nginx used to calibrate the load driver.
#
#   scripts/reference-nginx.sh start PORT WORKERS CPU_LIST   # e.g. start 7790 1 1
#   scripts/reference-nginx.sh pid                           # master pid (children = workers)
#   scripts/reference-nginx.sh stop
#
# Listens on 127.0.0.1:PORT only. Worker i is pinned to the i-th CPU of
# CPU_LIST (a comma-separated list, e.g. "1" or "0,1"); the master is pinned
# to the same CPUs with taskset. The prefix (config, pid, logs) is a
# temporary directory recorded in $STATE_FILE so that `stop` finds it.
# Needs nginx (Debian: apt-get update && apt-get install -y nginx).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
TEMPLATE="$HERE/../reference/nginx.conf"
STATE_FILE="${REFERENCE_NGINX_STATE:-/tmp/coresearch-reference-nginx.prefix}"
START_WAIT_TENTHS=50   # 5 s for nginx to write its pid file

usage() {
    sed -n '2,12p' "$0" >&2
    exit 2
}

# Prints nginx's worker_cpu_affinity masks for WORKERS workers over CPU_LIST.
affinity_masks() {
    local workers="$1" cpu_list="$2"
    local -a cpus
    IFS=',' read -r -a cpus <<< "$cpu_list"
    local highest=0 cpu
    for cpu in "${cpus[@]}"; do (( cpu > highest )) && highest=$cpu; done
    local masks=() index
    for (( index = 0; index < workers; index++ )); do
        local chosen=${cpus[$(( index % ${#cpus[@]} ))]} mask="" bit
        for (( bit = highest; bit >= 0; bit-- )); do
            if (( bit == chosen )); then mask+="1"; else mask+="0"; fi
        done
        masks+=("$mask")
    done
    echo "${masks[*]}"
}

start() {
    local port="$1" workers="$2" cpu_list="$3"
    command -v nginx >/dev/null || { echo "nginx not installed: apt-get update && apt-get install -y nginx" >&2; exit 1; }
    [[ -f "$STATE_FILE" ]] && { echo "already started (prefix $(cat "$STATE_FILE")); run stop first" >&2; exit 1; }
    local prefix
    prefix="$(mktemp -d /tmp/reference-nginx.XXXXXX)"
    chmod 755 "$prefix"
    sed -e "s|@WORKERS@|$workers|" \
        -e "s|@CPU_AFFINITY@|$(affinity_masks "$workers" "$cpu_list")|" \
        -e "s|@ADDRESS@|127.0.0.1:$port|" \
        -e "s|@PREFIX@|$prefix|g" \
        "$TEMPLATE" > "$prefix/nginx.conf"
    echo "$prefix" > "$STATE_FILE"
    taskset -c "$cpu_list" nginx -p "$prefix" -c "$prefix/nginx.conf" -e "$prefix/error.log"
    local tries=0
    until [[ -s "$prefix/nginx.pid" ]]; do
        (( ++tries > START_WAIT_TENTHS )) && { echo "nginx did not start; see $prefix/error.log" >&2; exit 1; }
        sleep 0.1
    done
    echo "nginx master $(cat "$prefix/nginx.pid") on 127.0.0.1:$port, $workers worker(s) on CPUs $cpu_list, prefix $prefix"
}

master_pid() {
    [[ -f "$STATE_FILE" ]] || { echo "not started" >&2; exit 1; }
    cat "$(cat "$STATE_FILE")/nginx.pid"
}

stop() {
    [[ -f "$STATE_FILE" ]] || { echo "not started"; return 0; }
    local prefix
    prefix="$(cat "$STATE_FILE")"
    if [[ -s "$prefix/nginx.pid" ]]; then
        nginx -p "$prefix" -c "$prefix/nginx.conf" -e "$prefix/error.log" -s quit || true
        local pid tries=0
        pid="$(cat "$prefix/nginx.pid" 2>/dev/null || true)"
        while [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null && (( ++tries <= START_WAIT_TENTHS )); do sleep 0.1; done
    fi
    rm -rf "$prefix" "$STATE_FILE"
    echo "stopped"
}

case "${1:-}" in
    start) [[ $# -eq 4 ]] || usage; start "$2" "$3" "$4" ;;
    pid) master_pid ;;
    stop) stop ;;
    *) usage ;;
esac
