"""The PyPI list N times: copy k shifts `id` by k*1,000,000 and appends ` editionk` to `summary`."""
import json, sys
copies = int(sys.argv[1])
source = sys.stdin.read().splitlines()
out = sys.stdout
for k in range(copies):
    for line in source:
        if not line:
            continue
        if k == 0:
            out.write(line + "\n")
            continue
        document = json.loads(line)
        document["id"] = document["id"] + k * 1_000_000
        if isinstance(document.get("summary"), str):
            document["summary"] += f" edition{k}"
        out.write(json.dumps(document, ensure_ascii=False) + "\n")
