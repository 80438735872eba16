#!/usr/bin/env python3
"""Search caches within a memory budget: many indexes, each searched with queries drawn from its
own documents, at several `--max-cache-memory` values, one server at a time.

Per budget, on a fresh data directory:
1. create `--indexes` indexes of `--documents` PyPI documents each (`name` and `summary`
   searchable) and wait for every task;
2. three passes over every index, each running the index's queries (whole words, two- and
   three-letter prefixes of them, and the words with one letter swapped, drawn from the
   index's own documents with a fixed seed), one client, one request at a time;
3. after each pass: the server's resident memory and the cache families of `/metrics`.

Prints one markdown table (per budget and pass: p50/p99 latency, RSS, cache bytes, refused
entries, shards closed for caches).

    python3 tuning/scripts/cache_budget.py --binary target/release/coresearch \
        --dataset /tmp/pypi800k.ndjson --indexes 200 --documents 4000 \
        --budgets default,64MiB,16MiB
"""

import argparse
import http.client
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

PORT = 7790
PASSES = 3
QUERIES_PER_INDEX = 24


def request(connection, method, path, body=None):
    payload = None if body is None else json.dumps(body)
    headers = {"Content-Type": "application/json"} if body is not None else {}
    connection.request(method, path, body=payload, headers=headers)
    response = connection.getresponse()
    data = response.read()
    return response.status, data


def wait_healthy(connection_factory, deadline):
    while time.time() < deadline:
        try:
            status, _ = request(connection_factory(), "GET", "/health")
            if status == 200:
                return
        except OSError:
            pass
        time.sleep(0.1)
    sys.exit("the server did not start")


def resident_mebibytes(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def metrics(connection):
    _, text = request(connection, "GET", "/metrics")
    wanted = {}
    for line in text.decode().splitlines():
        name, _, value = line.partition(" ")
        if name.startswith("coresearch_cache") or name.startswith("coresearch_stores_closed"):
            wanted[name] = float(value)
    return wanted


def queries_for(documents, rng):
    words = sorted(
        {
            word.lower()
            for document in documents
            for field in ("name", "summary")
            for word in str(document.get(field) or "").replace("-", " ").split()
            if word.isalpha() and len(word) >= 5
        }
    )
    chosen = rng.sample(words, min(len(words), QUERIES_PER_INDEX // 4))
    queries = []
    for word in chosen:
        queries.append(word)
        queries.append(word[:2])
        queries.append(word[:3])
        swapped = word[0] + word[2] + word[1] + word[3:]
        queries.append(swapped)
    return queries


def percentile(samples, fraction):
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def run_budget(arguments, budget, all_documents):
    directory = tempfile.mkdtemp(prefix="cache-budget-")
    command = [
        arguments.binary,
        "--db-path",
        os.path.join(directory, "data"),
        "--http-addr",
        f"127.0.0.1:{PORT}",
        "--experimental-enable-metrics",
    ]
    if budget != "default":
        command += ["--max-cache-memory", budget]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    connect = lambda: http.client.HTTPConnection("127.0.0.1", PORT, timeout=120)
    rows = []
    try:
        wait_healthy(connect, time.time() + 60)
        connection = connect()
        per_index = []
        started = time.time()
        for index in range(arguments.indexes):
            documents = all_documents[index * arguments.documents : (index + 1) * arguments.documents]
            uid = f"tenant{index}"
            request(connection, "PATCH", f"/indexes/{uid}/settings",
                    {"searchableAttributes": ["name", "summary"]})
            status, body = request(connection, "POST", f"/indexes/{uid}/documents", documents)
            assert status == 202, body
            per_index.append((uid, queries_for(documents, random.Random(index))))
        while True:
            _, body = request(connection, "GET", "/tasks?statuses=enqueued,processing&limit=1")
            if json.loads(body)["total"] == 0:
                break
            time.sleep(0.5)
        _, body = request(connection, "GET", "/tasks?statuses=failed&limit=1")
        failed = json.loads(body)["total"]
        fill_seconds = time.time() - started
        for number in range(1, PASSES + 1):
            latencies = []
            for uid, queries in per_index:
                for query in queries:
                    began = time.perf_counter()
                    status, body = request(connection, "POST", f"/indexes/{uid}/search",
                                           {"q": query, "limit": 20})
                    latencies.append((time.perf_counter() - began) * 1000)
                    assert status == 200, body
            figures = metrics(connection)
            rows.append({
                "budget": budget,
                "pass": number,
                "searches": len(latencies),
                "p50": percentile(latencies, 0.50),
                "p99": percentile(latencies, 0.99),
                "rss": resident_mebibytes(server.pid),
                "cache": figures.get("coresearch_cache_bytes", 0) / (1 << 20),
                "cache_max": figures.get("coresearch_cache_bytes_max", 0) / (1 << 20),
                "refused": int(figures.get("coresearch_cache_refused_total", 0)),
                "closed": int(figures.get("coresearch_stores_closed_for_caches_total", 0)),
                "fill": fill_seconds,
                "failed": failed,
            })
            # The cores look at the budget every second.
            time.sleep(1.5)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)
        shutil.rmtree(directory, ignore_errors=True)
    return rows


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--dataset", required=True, help="uncompressed NDJSON")
    parser.add_argument("--indexes", type=int, default=200)
    parser.add_argument("--documents", type=int, default=4000)
    parser.add_argument("--budgets", default="default,64MiB,16MiB")
    arguments = parser.parse_args()
    needed = arguments.indexes * arguments.documents
    all_documents = []
    with open(arguments.dataset) as dataset:
        for line in dataset:
            all_documents.append(json.loads(line))
            if len(all_documents) == needed:
                break
    print(f"`{' '.join(sys.argv)}`\n")
    print("| budget | pass | searches | p50 ms | p99 ms | RSS MiB | cache MiB | cache max MiB "
          "| refused | closed for caches | fill s | failed tasks |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for budget in arguments.budgets.split(","):
        for row in run_budget(arguments, budget, all_documents):
            print(f"| {row['budget']} | {row['pass']} | {row['searches']} | {row['p50']:.2f} "
                  f"| {row['p99']:.2f} | {row['rss']:.0f} | {row['cache']:.1f} "
                  f"| {row['cache_max']:.0f} | {row['refused']} | {row['closed']} "
                  f"| {row['fill']:.1f} | {row['failed']} |", flush=True)


if __name__ == "__main__":
    main()
