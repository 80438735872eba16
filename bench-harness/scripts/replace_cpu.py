#!/usr/bin/env python3
"""Indexing CPU of replacing documents, per server thread (a diagnostic, not a comparison).

Starts a coresearch binary on a copy of an indexed data directory (an index `pypi` whose
documents are the first BASE lines of the PyPI dataset, primary key `id`), sends 48 payloads
of 2,500 documents at 3 payloads per second, each document the content of a later dataset
line under the id of a base document, waits until no task is enqueued or processing, and
prints the CPU seconds each server thread used meanwhile (from /proc). No search runs.

usage: replace_cpu.py BINARY DATA_DIRECTORY PORT [DATASET] [BASE]
The data directory is used as it is: give each run its own copy of the same directory.
"""
import collections
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request

PAYLOADS = 48
PAYLOAD_DOCUMENTS = 2500
PAYLOADS_PER_SECOND = 3.0
ID_STRIDE = 7  # spreads the replaced ids over the base


def main():
    binary, data, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
    dataset = sys.argv[4] if len(sys.argv) > 4 else "../shared/datasets/pypi-packages.ndjson.zst"
    base = int(sys.argv[5]) if len(sys.argv) > 5 else 200_000
    url = f"http://127.0.0.1:{port}"

    def request(method, path, body=None, content_type="application/json"):
        call = urllib.request.Request(url + path, data=body, method=method,
                                      headers={"Content-Type": content_type})
        with urllib.request.urlopen(call, timeout=300) as response:
            return json.loads(response.read() or b"{}")

    replacing = PAYLOADS * PAYLOAD_DOCUMENTS
    lines = subprocess.run(["zstd", "-dc", dataset], capture_output=True, check=True).stdout \
        .decode().splitlines()[:base + replacing]
    ids = [json.loads(line)["id"] for line in lines[:base]]
    replacements = []
    for index in range(replacing):
        document = json.loads(lines[base + index])
        document["id"] = ids[(index * ID_STRIDE) % base]
        replacements.append(json.dumps(document))
    server = subprocess.Popen([binary, "--db-path", data, "--http-addr", f"127.0.0.1:{port}",
                               "--no-analytics"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        for _ in range(600):
            try:
                request("GET", "/health")
                break
            except OSError:
                time.sleep(0.1)
        time.sleep(2)

        def thread_seconds():
            seconds = collections.Counter()
            for thread in os.listdir(f"/proc/{server.pid}/task"):
                stat = open(f"/proc/{server.pid}/task/{thread}/stat").read()
                name = stat[stat.index("(") + 1: stat.rindex(")")]
                fields = stat[stat.rindex(")") + 2:].split()
                seconds[name] += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
            return seconds

        before = thread_seconds()
        start = time.time()
        for payload in range(PAYLOADS):
            body = "\n".join(replacements[payload * PAYLOAD_DOCUMENTS:
                                          (payload + 1) * PAYLOAD_DOCUMENTS]).encode()
            delay = start + payload / PAYLOADS_PER_SECOND - time.time()
            if delay > 0:
                time.sleep(delay)
            request("POST", "/indexes/pypi/documents", body, "application/x-ndjson")
        while request("GET", "/tasks?statuses=enqueued,processing&limit=1")["total"] > 0:
            time.sleep(0.1)
        after = thread_seconds()
        used = {name: round(after[name] - before.get(name, 0), 2) for name in after
                if after[name] - before.get(name, 0) > 0.05}
        print(json.dumps(used))
    finally:
        server.send_signal(signal.SIGKILL)
        server.wait()


if __name__ == "__main__":
    main()
