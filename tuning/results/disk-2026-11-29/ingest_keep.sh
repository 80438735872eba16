#!/bin/bash
# ingest_keep.sh BIN WORK LIMIT BATCH PORT : ingest into coresearch and keep the data
set -u
bin=$1 work=$2 limit=$3 batch=$4 port=$5
rm -rf "$work"; mkdir -p "$work"
"$bin" --db-path "$work/data" --http-addr 127.0.0.1:$port > "$work/server.log" 2>&1 &
pid=$!
for i in $(seq 1 100); do curl -sf http://127.0.0.1:$port/health >/dev/null && break; sleep 0.1; done
settings='{"searchableAttributes":["name","summary"],"filterableAttributes":["year","rank"],"sortableAttributes":["year","rank"]}'
curl -s -X PATCH -H 'Content-Type: application/json' "http://127.0.0.1:$port/indexes/ingest/settings" -d "$settings" > /dev/null
sleep 1
/tmp/cs-bench/ingest --url 127.0.0.1:$port --dataset /work/shared/datasets/pypi-packages.ndjson.zst --limit "$limit" --batch $batch --pid $pid --db-path "$work/data"
awk "{print \"cpu_s=\" (\$14+\$15)/100}" /proc/$pid/stat; sleep 20
du -sm "$work/data"
kill $pid; wait $pid 2>/dev/null
du -sm "$work/data"
