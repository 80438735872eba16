#!/bin/bash
# suw.sh LABEL BIN-ARGS...  : the scenario (100k payloads every 13 s under 16 connections)
label=$1; shift
/tmp/cs-final/search_under_writes "$@" \
    --dataset /work/shared/datasets/pypi-packages.ndjson.zst --work-dir /tmp/bench/suw-work-$label \
    --write-batch 100000 --write-documents 300000 --write-duration 40s \
    --duration 10s --after-indexing-duration 5s --output /tmp/bench/suw-$label.md > /tmp/bench/suw-$label.log 2>&1
echo "$label exit $?" >> /tmp/bench/suw-done.log
rm -rf /tmp/bench/suw-work-$label
