"""Asks every query of the mix once and writes, per query, the hit ids and estimatedTotalHits."""
import json, sys, http.client
port, out = int(sys.argv[1]), sys.argv[2]
conn = http.client.HTTPConnection('127.0.0.1', port)
answers = []
for line in open('mix.ndjson'):
    q = json.loads(line)
    if q['kind'] == 'sort_absent':
        continue
    conn.request('POST', '/indexes/pypi/search', json.dumps(q['body']), {'content-type': 'application/json'})
    r = conn.getresponse(); d = json.loads(r.read())
    answers.append({'body': q['body'], 'status': r.status, 'ids': [h['id'] for h in d.get('hits', [])], 'total': d.get('estimatedTotalHits')})
json.dump(answers, open(out, 'w'))
print(len(answers))
