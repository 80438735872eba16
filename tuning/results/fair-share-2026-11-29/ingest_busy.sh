#!/bin/bash
# ingest_busy.sh LABEL KIND(coresearch|meilisearch) BIN BUSY LIMIT OUT
# Starts one server on a fresh data directory, ingests LIMIT PyPI documents in 10k payloads
# (the ingest harness) with BUSY other processes spinning, stops the server.
set -u
label=$1 kind=$2 bin=$3 busy=$4 limit=$5 out=$6
work=/tmp/bench/work-$label
rm -rf "$work"; mkdir -p "$work"
port=7791
if [ "$kind" = meilisearch ]; then
  "$bin" --db-path "$work/data" --http-addr 127.0.0.1:$port --no-analytics --env development > "$work/server.log" 2>&1 &
else
  "$bin" --db-path "$work/data" --http-addr 127.0.0.1:$port > "$work/server.log" 2>&1 &
fi
pid=$!
for i in $(seq 1 100); do curl -sf http://127.0.0.1:$port/health >/dev/null && break; sleep 0.1; done
settings='{"searchableAttributes":["name","summary"],"filterableAttributes":["year","rank"],"sortableAttributes":["year","rank"]}'
curl -s -X PATCH -H 'Content-Type: application/json' "http://127.0.0.1:$port/indexes/ingest/settings" -d "$settings" > /dev/null
sleep 1
{ echo "== $label ($kind) busy=$busy limit=$limit $(date -u +%H:%M:%S)"; grep -E "^(steal|cpu) " /proc/stat | head -1;
  /tmp/cs-bench/ingest --url 127.0.0.1:$port --dataset /work/shared/datasets/pypi-packages.ndjson.zst --limit "$limit" --batch 10000 --busy-processes "$busy" --pid $pid --db-path "$work/data";
  grep -E "^cpu " /proc/stat | head -1; } >> "$out" 2>&1
kill $pid; wait $pid 2>/dev/null
rm -rf "$work"
