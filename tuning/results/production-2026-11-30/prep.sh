#!/bin/bash
# prep.sh BIN INGEST WORK PORT: index 886,323 PyPI documents (the search_at_scale settings) and keep the data
set -u
bin=$1 ingest=$2 work=$3 port=$4
rm -rf "$work"; mkdir -p "$work"
"$bin" --db-path "$work/data" --http-addr 127.0.0.1:$port > "$work/server.log" 2>&1 &
pid=$!
for i in $(seq 1 100); do curl -sf http://127.0.0.1:$port/health >/dev/null && break; sleep 0.1; done
settings='{"searchableAttributes":["name","summary"],"filterableAttributes":["year","rank"],"sortableAttributes":["year","rank"]}'
curl -s -X PATCH -H 'Content-Type: application/json' "http://127.0.0.1:$port/indexes/pypi/settings" -d "$settings" > /dev/null
sleep 1
"$ingest" --url 127.0.0.1:$port --dataset /work/shared/datasets/pypi-packages.ndjson.zst --limit 886323 --batch 10000 --pid $pid --db-path "$work/data" --index pypi
sleep 10
kill $pid; wait $pid 2>/dev/null
du -sm "$work/data"
