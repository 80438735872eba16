"""The official Meilisearch Python client against coresearch: `/health`, `/version` and
`/experimental-features` must answer exactly what Meilisearch 1.41 answers.

Usage: python3 skeleton_routes.py BINARY

Starts BINARY (a coresearch build) on a free loopback port with a temporary data directory and
a master key, talks to it only through the `meilisearch` package (the official client), then
restarts it on the same data directory to check that a feature change persisted. Exits 0
when every check holds; any failed check raises and exits non-zero.

What Meilisearch 1.41 answers (reference §1, "Skeleton routes"):
- `GET /health` -> `{"status": "available"}`, with or without a key;
- `GET /version` -> exactly the keys `commitSha`, `commitDate` (strings) and `pkgVersion`
  "1.41.0";
- `GET /experimental-features` -> exactly the fifteen runtime features of Meilisearch 1.50,
  all `false` on a new instance but `legacySearch`, which is always `true` (coresearch has
  only 1.41's search pipeline); `PATCH` with any subset answers the whole new object and
  persists it.
"""

import socket
import subprocess
import sys
import tempfile
import time

import meilisearch
from meilisearch.errors import MeilisearchApiError

MASTER_KEY = "python-client-master-key-0123456789"
START_TIMEOUT_SECONDS = 30.0
FEATURES = [
    "metrics",
    "logsRoute",
    "editDocumentsByFunction",
    "containsFilter",
    "dynamicSearchRules",
    "network",
    "getTaskDocumentsRoute",
    "taskQueueCompactionRoute",
    "compositeEmbedders",
    "chatCompletions",
    "multimodal",
    "foreignKeys",
    "disableDocumentsFetchQueue",
    "legacySearch",
    "renderRoute",
]
# What a new instance answers for each feature.
NEW_INSTANCE = dict.fromkeys(FEATURES, False) | {"legacySearch": True}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Server:
    """One coresearch process on `data_dir`, stopped on exit from the `with` block."""

    def __init__(self, binary: str, data_dir: str) -> None:
        self.port = free_port()
        self.process = subprocess.Popen(
            [
                binary,
                "--http-addr", f"127.0.0.1:{self.port}",
                "--db-path", data_dir,
                "--master-key", MASTER_KEY,
                "--cores", "2",
                "--log-level", "WARN",
            ],
            stdout=subprocess.DEVNULL,
        )
        self.url = f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> "Server":
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        client = meilisearch.Client(self.url)
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"coresearch exited with status {self.process.returncode}")
            if client.is_healthy():
                return self
            time.sleep(0.05)
        raise RuntimeError("coresearch did not become healthy")

    def __exit__(self, *_exception: object) -> None:
        self.process.terminate()
        status = self.process.wait(timeout=START_TIMEOUT_SECONDS)
        assert status == 0, f"a graceful stop exits 0, not {status}"


def expect_equal(seen: object, expected: object, what: str) -> None:
    assert seen == expected, f"{what}: expected {expected!r}, got {seen!r}"


def check_health_and_version(url: str) -> None:
    expect_equal(meilisearch.Client(url).health(), {"status": "available"}, "health without a key")
    client = meilisearch.Client(url, MASTER_KEY)
    expect_equal(client.health(), {"status": "available"}, "health with the key")
    version = client.get_version()
    expect_equal(sorted(version), ["commitDate", "commitSha", "pkgVersion"], "version keys")
    expect_equal(version["pkgVersion"], "1.41.0", "pkgVersion")
    for key in ("commitSha", "commitDate"):
        assert isinstance(version[key], str) and version[key], f"{key} is a non-empty string"


def check_authorization(url: str) -> None:
    # Without a key the client still sends `Authorization: Bearer None`, which Meilisearch
    # refuses as a wrong key (403), like any other key that is not the master key.
    for api_key in ("not-the-master-key", None):
        try:
            meilisearch.Client(url, api_key).get_experimental_features()
        except MeilisearchApiError as error:
            expect_equal(error.status_code, 403, f"status for key {api_key!r}")
            expect_equal(error.code, "invalid_api_key", f"code for key {api_key!r}")
            expect_equal(error.type, "auth", f"type for key {api_key!r}")
        else:
            raise AssertionError(f"key {api_key!r} must be refused")


def check_features(url: str) -> dict:
    client = meilisearch.Client(url, MASTER_KEY)
    expect_equal(client.get_experimental_features(), NEW_INSTANCE, "new instance")
    updated = client.update_experimental_features({"metrics": True, "containsFilter": True})
    expected = NEW_INSTANCE | {"metrics": True, "containsFilter": True}
    expect_equal(list(updated), FEATURES, "every feature, in Meilisearch's order")
    expect_equal(updated, expected, "PATCH answers the whole new object")
    # null leaves a feature as it is; a later PATCH changes only what it names.
    after_null = client.update_experimental_features({"metrics": None, "network": True})
    expected |= {"network": True}
    expect_equal(after_null, expected, "null keeps, true sets")
    expect_equal(client.get_experimental_features(), expected, "GET after PATCH")
    return expected


def main() -> None:
    binary = sys.argv[1]
    with tempfile.TemporaryDirectory() as data_dir:
        with Server(binary, data_dir) as server:
            check_health_and_version(server.url)
            check_authorization(server.url)
            expected = check_features(server.url)
        with Server(binary, data_dir) as server:
            features = meilisearch.Client(server.url, MASTER_KEY).get_experimental_features()
            expect_equal(features, expected, "features after a restart")
    print(f"official Python client {meilisearch.version.qualified_version()}: every check holds")


if __name__ == "__main__":
    main()
