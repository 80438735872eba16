#!/usr/bin/env python3
"""Sends the same API requests to coresearch and to Meilisearch and lists every difference a
client can see: the status, and the JSON body once the values that differ by nature are
masked (uids, dates, durations, request uids, keys, versions).

Usage: differential_api.py CORESEARCH_URL MEILISEARCH_URL [--key KEY] [--only SUBSTRING]

Both servers must be fresh (no index) and started with the same master key (default
`masterKey`). A write answered 202 is waited for on each server before the next request, and
the finished task is compared too. The requests are the scenario below: every route family
of 1.41 and 1.50, with valid and invalid bodies, in the order a user would send them.
`POST /export` is left out: Meilisearch 1.50 keeps an export to an invalid URL `processing`
for minutes, holding every later task behind it.

Exit status: 0 when no difference is found, 1 otherwise.
"""

import argparse
import json
import sys
import time
import urllib.error
import urllib.request

# Keys whose values differ between two servers by nature, masked wherever they appear.
VOLATILE_KEYS = {
    "taskUid", "uid", "batchUid", "enqueuedAt", "startedAt", "finishedAt", "duration",
    "processingTimeMs", "requestUid", "createdAt", "updatedAt", "key", "version",
    "commitSha", "commitDate", "pkgVersion", "databaseSize", "usedDatabaseSize",
    "lastUpdate", "rawDocumentDbSize", "avgDocumentSize", "dumpUid", "progressTrace",
    "writeChannelCongestion", "internalDatabaseSizes", "batchStrategy", "stats",
    "embedderRequests", "preCompactionSize", "postCompactionSize",
}
# How long a task may take on either server.
TASK_TIMEOUT_SECONDS = 60.0
TERMINAL = {"succeeded", "failed", "canceled"}


def request(base, method, path, body, key):
    data = None if body is None else json.dumps(body).encode()
    headers = {"Authorization": f"Bearer {key}"}
    if data is not None:
        headers["Content-Type"] = "application/json"
    req = urllib.request.Request(base + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=30) as response:
            return response.status, parse(response.read())
    except urllib.error.HTTPError as error:
        return error.code, parse(error.read())


def parse(raw):
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode(errors="replace")


def wait_task(base, uid, key):
    deadline = time.monotonic() + TASK_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        _, task = request(base, "GET", f"/tasks/{uid}", None, key)
        if isinstance(task, dict) and task.get("status") in TERMINAL:
            return task
        time.sleep(0.05)
    return {"status": "timeout"}


def masked(value):
    if isinstance(value, dict):
        return {k: ("<masked>" if k in VOLATILE_KEYS else masked(v)) for k, v in value.items()}
    if isinstance(value, list):
        return [masked(item) for item in value]
    return value


def differences(left, right, path="$"):
    """Every place where two JSON values differ, as text."""
    if type(left) is not type(right):
        return [f"{path}: {json.dumps(left)[:300]} ≠ {json.dumps(right)[:300]}"]
    if isinstance(left, dict):
        found = []
        for name in sorted(set(left) | set(right)):
            if name not in left:
                found.append(f"{path}.{name}: missing on coresearch")
            elif name not in right:
                found.append(f"{path}.{name}: only on coresearch")
            else:
                found.extend(differences(left[name], right[name], f"{path}.{name}"))
        if not found and list(left) != list(right):
            found.append(f"{path}: key order {list(left)} ≠ {list(right)}")
        return found
    if isinstance(left, list):
        if len(left) != len(right):
            return [f"{path}: {len(left)} items ≠ {len(right)}"]
        found = []
        for index, (a, b) in enumerate(zip(left, right)):
            found.extend(differences(a, b, f"{path}[{index}]"))
        return found
    if isinstance(left, float) or isinstance(right, float):
        if abs(float(left) - float(right)) > 1e-6:
            return [f"{path}: {left} ≠ {right}"]
        return []
    return [] if left == right else [f"{path}: {json.dumps(left)[:300]} ≠ {json.dumps(right)[:300]}"]


MOVIES = [
    {"id": 1, "title": "Carol", "genres": ["Romance", "Drama"], "year": 2015, "rating": 7.2,
     "info": {"director": "Todd Haynes", "budget": 11}, "_geo": {"lat": 45.5, "lng": 9.1}},
    {"id": 2, "title": "Wonder Woman", "genres": ["Action", "Adventure"], "year": 2017,
     "rating": 7.4, "info": {"director": "Patty Jenkins", "budget": 149}},
    {"id": 3, "title": "Life of Pi", "genres": ["Adventure", "Drama"], "year": 2012,
     "rating": 7.9, "info": {"director": "Ang Lee", "budget": 120}},
    {"id": 4, "title": "Mad Max: Fury Road", "genres": ["Adventure", "Science Fiction"],
     "year": 2015, "rating": 8.1, "info": {"director": "George Miller", "budget": 150}},
    {"id": 5, "title": "Moana", "genres": ["Fantasy", "Action"], "year": 2016, "rating": 7.6,
     "info": {"director": "Ron Clements", "budget": 150}},
    {"id": 6, "title": "Philadelphia", "genres": ["Drama"], "year": 1993, "rating": 7.7,
     "info": {"director": "Jonathan Demme", "budget": 26}},
]

# (method, path, body): the scenario, in order.
SCENARIO = [
    ("GET", "/health", None),
    ("GET", "/experimental-features", None),
    ("PATCH", "/experimental-features", {"legacySearch": True}),
    ("PATCH", "/experimental-features", {"nope": True}),
    ("POST", "/indexes", {"uid": "movies", "primaryKey": "id"}),
    ("POST", "/indexes", {"uid": "movies"}),
    ("POST", "/indexes", {"uid": "bad uid!"}),
    ("POST", "/indexes", {}),
    ("GET", "/indexes/movies", None),
    ("GET", "/indexes/nope", None),
    ("POST", "/indexes/movies/documents", MOVIES),
    ("POST", "/indexes/movies/documents", {"id": "x y"}),
    ("POST", "/indexes/movies/documents", [{"title": "no id"}]),
    ("GET", "/indexes/movies/documents?limit=2&offset=1", None),
    ("GET", "/indexes/movies/documents?fields=title,year&limit=3", None),
    ("GET", "/indexes/movies/documents/3", None),
    ("GET", "/indexes/movies/documents/999", None),
    ("GET", "/indexes/movies/documents?limit=-1", None),
    ("POST", "/indexes/movies/documents/fetch", {"limit": 2, "filter": "year > 2000"}),
    ("POST", "/indexes/movies/documents/fetch", {"filter": "year > 2000"}),
    ("POST", "/indexes/movies/documents/fetch", {"ids": [1, "2"], "fields": ["id"]}),
    ("POST", "/indexes/movies/documents/fetch", {"ids": [{"a": 1}]}),
    ("POST", "/indexes/movies/documents/fetch", {"sort": ["year:asc"]}),
    ("PATCH", "/indexes/movies/settings", {
        "filterableAttributes": ["genres", "year", "info", "_geo", "rating"],
        "sortableAttributes": ["year", "rating", "title"],
        "searchableAttributes": ["title", "genres", "info.director"],
    }),
    ("GET", "/indexes/movies/settings", None),
    ("PATCH", "/indexes/movies/settings", {"rankingRules": ["words", "nope"]}),
    ("PATCH", "/indexes/movies/settings", {"typoTolerance": {"minWordSizeForTypos": {"oneTypo": 9, "twoTypos": 3}}}),
    ("PATCH", "/indexes/movies/settings", {"pagination": {"maxTotalHits": -1}}),
    ("PATCH", "/indexes/movies/settings", {"faceting": {"maxValuesPerFacet": 2, "sortFacetValuesBy": {"genres": "count"}}}),
    ("POST", "/indexes/movies/documents/fetch", {"sort": ["year:asc", "id:desc"], "fields": ["id", "year"]}),
    ("POST", "/indexes/movies/documents/fetch", {"sort": ["nope:asc"]}),
    ("POST", "/indexes/movies/search", {"q": "wonder"}),
    ("POST", "/indexes/movies/search", {"q": "wonder woman", "showRankingScore": True}),
    ("POST", "/indexes/movies/search", {"q": "drama", "facets": ["genres", "year"]}),
    ("POST", "/indexes/movies/search", {"facets": ["info.*"], "limit": 0}),
    ("POST", "/indexes/movies/search", {"facets": ["info"], "limit": 0}),
    ("POST", "/indexes/movies/search", {"facets": ["nope", "g*"]}),
    ("POST", "/indexes/movies/search", {"q": "", "filter": "year > 2014 AND genres = Drama", "sort": ["rating:desc"]}),
    ("POST", "/indexes/movies/search", {"filter": "title = Carol"}),
    ("POST", "/indexes/movies/search", {"filter": "year >"}),
    ("POST", "/indexes/movies/search", {"sort": ["nope:asc"]}),
    ("POST", "/indexes/movies/search", {"q": "carol", "attributesToHighlight": ["*"], "attributesToCrop": ["title:1"], "showMatchesPosition": True}),
    ("POST", "/indexes/movies/search", {"q": "mad", "page": 1, "hitsPerPage": 2}),
    ("POST", "/indexes/movies/search", {"limit": "ten"}),
    ("POST", "/indexes/movies/search", {"q": "a", "matchingStrategy": "nope"}),
    ("POST", "/indexes/movies/search", {"filter": "_geoRadius(45.5, 9.1, 1000)"}),
    ("POST", "/indexes/movies/search", {"sort": ["_geoPoint(45.5, 9.1):asc"], "limit": 2}),
    ("GET", "/indexes/movies/search?q=moana&attributesToRetrieve=title", None),
    ("GET", "/indexes/movies/search?limit=abc", None),
    ("POST", "/indexes/movies/facet-search", {"facetName": "genres", "facetQuery": "dr"}),
    ("POST", "/indexes/movies/facet-search", {"facetName": "title"}),
    ("POST", "/multi-search", {"queries": [{"indexUid": "movies", "q": "life"}, {"indexUid": "movies", "q": "max", "limit": 1}]}),
    ("POST", "/multi-search", {"federation": {}, "queries": [{"indexUid": "movies", "q": "life"}, {"indexUid": "movies", "q": "max"}]}),
    ("POST", "/multi-search", {"federation": {"facetsByIndex": {"movies": ["genres"]}}, "queries": [{"indexUid": "movies"}]}),
    ("POST", "/multi-search", {"queries": [{"indexUid": "nope"}]}),
    ("POST", "/multi-search", {"federation": {"limit": 2}, "queries": [{"indexUid": "movies", "limit": 3}]}),
    ("GET", "/indexes/movies/stats", None),
    ("GET", "/stats", None),
    ("GET", "/stats?sizeFormat=nope", None),
    ("POST", "/indexes/movies/documents/delete-batch", [1, 2]),
    ("POST", "/indexes/movies/documents/delete", {"filter": "year < 2000"}),
    ("POST", "/indexes/movies/documents/delete", {"filter": "title = x"}),
    ("DELETE", "/indexes/movies/documents/5", None),
    ("GET", "/indexes/movies/documents", None),
    ("POST", "/indexes", {"uid": "other"}),
    ("POST", "/swap-indexes", [{"indexes": ["movies", "other"]}]),
    ("POST", "/swap-indexes", [{"indexes": ["movies", "bad uid"]}]),
    ("POST", "/swap-indexes", [{"indexes": ["movies"]}]),
    ("GET", "/indexes?limit=1", None),
    ("GET", "/tasks?types=documentAdditionOrUpdate&statuses=failed", None),
    ("GET", "/tasks?types=nope", None),
    ("GET", "/tasks?limit=2&from=1", None),
    ("GET", "/batches?limit=1", None),
    ("POST", "/keys", {"actions": ["search"], "indexes": ["movies"], "expiresAt": None}),
    ("POST", "/keys", {"actions": ["nope"], "indexes": ["movies"], "expiresAt": None}),
    ("GET", "/keys/not-a-uuid", None),
    ("PATCH", "/experimental-features", {"dynamicSearchRules": True, "renderRoute": True}),
    ("PATCH", "/dynamic-search-rules/r1", {"description": "d", "precedence": 1, "active": True,
                                             "conditions": {"query": {"words": ["life"]}},
                                             "actions": [{"selector": {"id": "4"}, "action": {"type": "pin", "position": 1}}]}),
    ("GET", "/dynamic-search-rules/r1", None),
    ("POST", "/dynamic-search-rules", {}),
    ("POST", "/indexes/other/search", {"q": "life"}),
    ("PATCH", "/dynamic-search-rules/r2", {"precedence": "high"}),
    ("DELETE", "/dynamic-search-rules/r1", None),
    ("POST", "/render-template", {"template": {"inline": "{{ doc.title }}"}, "input": {"inline": {"doc": {"title": "x"}}}}),
    ("POST", "/render-template", {"template": {}}),
    ("DELETE", "/indexes/other", None),
    ("DELETE", "/indexes/nope", None),
    ("GET", "/indexes/movies/settings/filterable-attributes", None),
    ("PUT", "/indexes/movies/settings/displayed-attributes", ["title", "year"]),
    ("PUT", "/indexes/movies/settings/displayed-attributes", "title"),
    ("POST", "/indexes/movies/search", {"q": "life", "attributesToRetrieve": ["*"]}),
    ("DELETE", "/indexes/movies/settings/displayed-attributes", None),
    ("PUT", "/indexes/movies/settings/synonyms", {"film": ["movie"]}),
    ("PUT", "/indexes/movies/settings/stop-words", ["the", "of"]),
    ("PATCH", "/indexes/movies/settings", {"embedders": {"manual": {"source": "userProvided", "dimensions": 3}}}),
    ("PATCH", "/indexes/movies/settings", {"embedders": {"bad": {"source": "nope"}}}),
    ("POST", "/indexes/movies/documents", [{"id": 10, "title": "Vector one", "_vectors": {"manual": [0.1, 0.2, 0.3]}},
                                           {"id": 11, "title": "Vector two", "_vectors": {"manual": [0.3, 0.2, 0.1]}}]),
    ("POST", "/indexes/movies/documents", [{"id": 12, "title": "Bad vector", "_vectors": {"manual": [0.1]}}]),
    ("POST", "/indexes/movies/search", {"vector": [0.1, 0.2, 0.3], "hybrid": {"embedder": "manual", "semanticRatio": 1.0}, "limit": 2, "attributesToRetrieve": ["id"]}),
    ("POST", "/indexes/movies/search", {"vector": [0.1, 0.2], "hybrid": {"embedder": "manual"}}),
    ("POST", "/indexes/movies/search", {"q": "x", "hybrid": {"embedder": "nope"}}),
    ("POST", "/indexes/movies/similar", {"id": 10, "embedder": "manual", "attributesToRetrieve": ["id"]}),
    ("POST", "/indexes/movies/similar", {"id": 10}),
    ("GET", "/indexes/movies/documents/10?retrieveVectors=true", None),
    ("PATCH", "/indexes/movies", {"primaryKey": "title"}),
    ("POST", "/indexes/movies/documents/edit", {"function": "doc.title = 1"}),
    ("GET", "/network", None),
    ("GET", "/metrics", None),
    ("POST", "/logs/stream", {"mode": "human"}),
    ("GET", "/chats", None),
    ("POST", "/webhooks", {"url": "not a url"}),
    ("GET", "/webhooks", None),
    ("POST", "/tasks/cancel", None),
    ("POST", "/tasks/cancel?uids=abc", None),
    ("DELETE", "/tasks?statuses=nope", None),
    ("GET", "/tasks/999999", None),
    ("GET", "/batches/999999", None),
    ("GET", "/keys?limit=x", None),
    ("PATCH", "/keys/00000000-0000-0000-0000-000000000000", {"name": "x"}),
    ("DELETE", "/keys/00000000-0000-0000-0000-000000000000", None),
    ("GET", "/indexes/movies/fields", None),
    ("POST", "/indexes/movies/compact", None),
    ("GET", "/stats?showInternalDatabaseSizes=maybe", None),
    ("DELETE", "/dynamic-search-rules", None),
    ("DELETE", "/indexes/movies/documents", None),
]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("coresearch")
    parser.add_argument("meilisearch")
    parser.add_argument("--key", default="masterKey")
    parser.add_argument("--only", default=None)
    args = parser.parse_args()
    found = 0
    for number, (method, path, body) in enumerate(SCENARIO):
        answers = []
        for base in (args.coresearch, args.meilisearch):
            status, answer = request(base, method, path, body, args.key)
            task = None
            if status == 202 and isinstance(answer, dict) and "taskUid" in answer:
                task = wait_task(base, answer["taskUid"], args.key)
            answers.append((status, masked(answer), masked(task)))
        label = f"#{number} {method} {path}"
        if args.only and args.only not in label:
            continue
        (cs_status, cs_body, cs_task), (ms_status, ms_body, ms_task) = answers
        lines = []
        if cs_status != ms_status:
            lines.append(f"status {cs_status} ≠ {ms_status}")
        lines.extend(differences(cs_body, ms_body, "body"))
        lines.extend(differences(cs_task, ms_task, "task"))
        if lines:
            found += 1
            print(f"{label} {json.dumps(body)[:160] if body is not None else ''}")
            for line in lines:
                print(f"    {line}")
    print(f"{len(SCENARIO)} requests, {found} with differences")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
