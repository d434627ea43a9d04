#!/usr/bin/env python3
"""The request bodies of the serve benchmarks (serve-bench.sh, serve-instructions.sh), written
into DIR: seed.json (a 200-item geosubmit: a 100 m x 100 m grid walk hearing 40 APs and three
LTE cells with TA), geolocate.json (8 APs + an LTE cell with TA), refine.json (one record with
an 8-AP scan), geosubmit.json (one item), empty.json, and for each a wrk script NAME.lua
(POST with that body; WRK_DELAY_MS paces each connection; done() prints a RESULT line).
Usage: serve_requests.py DIR"""
import json, math, sys
w = sys.argv[1]
lat0, lon0 = 47.37, 8.54
def at(e, n): return lat0 + n / 111195.0, lon0 + e / (111195.0 * math.cos(math.radians(lat0)))
aps = ["00:1b:cc:00:%02x:%02x" % (i // 256, i % 256) for i in range(40)]
items = []
for k in range(200):                                   # a 100 m x 100 m grid walk
    e, n = (k % 10) * 10.0, (k // 10) * 5.0
    la, lo = at(e, n)
    wifi = [{"macAddress": a, "signalStrength": -40 - 0.4 * math.hypot(e - (i % 8) * 12, n - (i // 8) * 20)} for i, a in enumerate(aps)]
    items.append({"position": {"latitude": la, "longitude": lo, "accuracy": 5},
                  "cellTowers": [{"radioType": "lte", "mobileCountryCode": 228, "mobileNetworkCode": 1, "locationAreaCode": 1000,
                                  "cellId": 5000 + k % 3, "timingAdvance": 1 + k % 4, "serving": 1}],
                  "wifiAccessPoints": wifi})
json.dump({"items": items}, open(w + "/seed.json", "w"))
la, lo = at(45, 45)
json.dump({"cellTowers": [{"radioType": "lte", "mobileCountryCode": 228, "mobileNetworkCode": 1, "locationAreaCode": 1000,
                           "cellId": 5001, "timingAdvance": 2}],
           "wifiAccessPoints": [{"macAddress": a, "signalStrength": -55 - 2 * i} for i, a in enumerate(aps[:8])]},
          open(w + "/geolocate.json", "w"))
json.dump({"lat": la, "lon": lo, "accuracy_m": 30, "t": 10,
           "evidence": [{"t": 9.5, "type": "wifi", "aps": [{"bssid": a, "rss": -55 - 2 * i} for i, a in enumerate(aps[:8])]}]},
          open(w + "/refine.json", "w"))
json.dump({"items": [items[7]]}, open(w + "/geosubmit.json", "w"))
json.dump({}, open(w + "/empty.json", "w"))
for name in ["geolocate", "refine", "geosubmit", "empty"]:
    body = open(w + "/" + name + ".json").read()
    open(w + "/" + name + ".lua", "w").write(
        'wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\nwrk.body = %s\n'
        'local d = tonumber(os.getenv("WRK_DELAY_MS") or "0")\nif d > 0 then function delay() return d end end\n'
        'function done(summary, latency, requests)\n  io.write(string.format("RESULT %%.1f %%.3f %%.3f %%d %%d\\n", '
        'summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1000, latency:percentile(99) / 1000, '
        'summary.errors.status + summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout, summary.requests))\nend\n' % json.dumps(body))
