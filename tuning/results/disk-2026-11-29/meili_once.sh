#!/bin/bash
# meili_once.sh WORK PORT: Meilisearch ingests the PyPI set in 10k payloads (the ingest harness), disk at rest
work=$1 port=$2
rm -rf $work; mkdir -p $work
/tmp/s61/meilisearch --db-path $work/data --http-addr 127.0.0.1:$port --no-analytics --env development --experimental-legacy-search-default > $work/server.log 2>&1 &
pid=$!
for i in $(seq 1 100); do curl -sf http://127.0.0.1:$port/health >/dev/null && break; sleep 0.1; done
curl -s -X PATCH -H 'Content-Type: application/json' "http://127.0.0.1:$port/indexes/ingest/settings" -d '{"searchableAttributes":["name","summary"],"filterableAttributes":["year","rank"],"sortableAttributes":["year","rank"]}' > /dev/null
sleep 1
/tmp/cs-bench/ingest --url 127.0.0.1:$port --dataset /work/shared/datasets/pypi-packages.ndjson.zst --batch 10000 --pid $pid --db-path $work/data
awk '{print "cpu_s=" ($14+$15)/100}' /proc/$pid/stat
sleep 20; echo "rest_mib=$(du -sm $work/data | cut -f1)"
kill $pid; wait $pid 2>/dev/null
