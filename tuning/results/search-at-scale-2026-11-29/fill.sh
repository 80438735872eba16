#!/usr/bin/env bash
# fill.sh DOCS DIR PORT: a coresearch data directory holding the first DOCS documents of the 2.66M set.
set -euo pipefail
docs=$1; dir=$2; port=$3
bin=target/release/coresearch
rm -rf "$dir"; mkdir -p "$dir"
$bin --db-path "$dir/data" --http-addr 127.0.0.1:$port --no-analytics > "$dir/server.log" 2>&1 &
pid=$!
until curl -sf 127.0.0.1:$port/health >/dev/null; do sleep 0.2; done
curl -s -X POST 127.0.0.1:$port/indexes -H 'content-type: application/json' -d '{"uid":"pypi","primaryKey":"id"}' >/dev/null
curl -s -X PATCH 127.0.0.1:$port/indexes/pypi/settings -H 'content-type: application/json' \
  -d '{"searchableAttributes":["name","summary"],"filterableAttributes":["year","rank"],"sortableAttributes":["year","rank"]}' >/dev/null
sleep 1
target/release/ingest --url 127.0.0.1:$port --index pypi --limit "$docs" --batch 100000 \
  --pid $pid --db-path "$dir/data" --dataset ./pypi2660k.ndjson.zst
kill $pid; wait $pid || true
