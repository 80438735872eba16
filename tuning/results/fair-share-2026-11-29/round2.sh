#!/bin/bash
# Round 2: the final build, batch policy (default) and normal, beside Meilisearch.
cd /tmp/bench
out=/tmp/bench/ingest-round2.txt; : > $out
for run in 1 2 3; do
  ./ingest_busy.sh final-batch-busy2-$run coresearch /tmp/cs-final/coresearch 2 200000 $out
  CORESEARCH_INDEXING_SCHEDULER_POLICY=normal ./ingest_busy.sh final-normal-busy2-$run coresearch /tmp/cs-final/coresearch 2 200000 $out
  ./ingest_busy.sh meili-busy2-$run meilisearch /tmp/meilisearch-1.50 2 200000 $out
done
./ingest_busy.sh final-batch-quiet coresearch /tmp/cs-final/coresearch 0 200000 $out
./suw.sh final-batch-1 --coresearch-bin /tmp/cs-final/coresearch
CORESEARCH_INDEXING_SCHEDULER_POLICY=normal ./suw.sh final-normal-1 --coresearch-bin /tmp/cs-final/coresearch
./suw.sh meili-1 --meilisearch-bin /tmp/meilisearch-1.50 --meilisearch-port 7712 --meilisearch-argument=--experimental-legacy-search-default
echo round2-done >> /tmp/bench/suw-done.log
