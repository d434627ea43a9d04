#!/usr/bin/env python3
"""Builds Traces/reports/ (sample reports for `posfuse refine`) from the bundled simulator trace
Traces/mall-sparse-ap: each good report is a moment of that walk, with the phone's reported
position displaced from the truth (a poor indoor fix: 20-60 m off, accuracy 30 m), and as evidence
the WiFi scans and the IMU window (acc, gyro, mag) of the preceding WINDOW seconds. Partial reports
carry no evidence or only unusable evidence; malformed ones exercise the error records.
Deterministic (seeded). Writes sample-reports.jsonl, truth.jsonl (id, lat, lon of the phone) and
copies reference.json. Usage: scripts/make-sample-reports.py [WINDOW_S]
"""
import json, math, os, random, sys

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
src = os.path.join(root, "Traces", "mall-sparse-ap")
dst = os.path.join(root, "Traces", "reports")
window = float(sys.argv[1]) if len(sys.argv) > 1 else 12.0
rng = random.Random(2026)

lines = open(os.path.join(src, "trace.jsonl")).read().splitlines()
header = json.loads(lines[0])
events = [json.loads(l) for l in lines[1:]]
truth = [e for e in events if e["type"] == "gt" and e.get("device", "phone") == "phone"]
lat0, lon0 = header["origin"]["lat"], header["origin"]["lon"]

def offset(lat, lon, de, dn):
    r = 6378137.0
    return lat + math.degrees(dn / r), lon + math.degrees(de / (r * math.cos(math.radians(lat))))

def truth_at(t):
    best = min(truth, key=lambda g: abs(g["t"] - t))
    if "lat" in best:
        return best["lat"], best["lon"]
    return offset(lat0, lon0, best["e"], best["n"])   # local ENU truth (metres from the origin)

reports, truths = [], []
times = [60 + 45 * k for k in range(10)]
for k, t in enumerate(times):
    lat, lon = truth_at(t)
    d, a = rng.uniform(20, 60), rng.uniform(0, 2 * math.pi)
    rlat, rlon = offset(lat, lon, d * math.sin(a), d * math.cos(a))
    ev = [e for e in events if t - window <= e["t"] <= t and e["type"] in ("wifi", "acc", "gyro", "mag")]
    rid = f"mall-{k:02d}"
    reports.append(json.dumps({"id": rid, "lat": rlat, "lon": rlon, "accuracy_m": 30.0, "t": t, "evidence": ev},
                              separators=(",", ":")))
    truths.append(json.dumps({"id": rid, "lat": lat, "lon": lon}))

# Partial: no evidence at all; evidence of an unknown type only; a GeoJSON Feature with one scan.
lat, lon = truth_at(500)
reports.append(json.dumps({"id": "partial-no-evidence", "lat": lat, "lon": lon, "accuracy_m": 15.0, "t": 500}))
reports.append(json.dumps({"id": "partial-unknown-evidence", "lat": lat, "lon": lon, "accuracy_m": 15.0, "t": 500,
                           "evidence": [{"t": 499, "type": "lidar", "points": 3}]}))
scan = [e for e in events if e["type"] == "wifi" and e["t"] <= 500][-1]
reports.append(json.dumps({"type": "Feature", "geometry": {"type": "Point", "coordinates": [lon, lat]},
                           "properties": {"id": "feature-one-scan", "accuracy_m": 25.0, "t": scan["t"], "evidence": [scan]}}))
truths.append(json.dumps({"id": "partial-no-evidence", "lat": lat, "lon": lon}))
truths.append(json.dumps({"id": "partial-unknown-evidence", "lat": lat, "lon": lon}))
truths.append(json.dumps({"id": "feature-one-scan", "lat": lat, "lon": lon}))
# Malformed: latitude out of range, missing accuracy, evidence that is not an array, not JSON.
reports.append(json.dumps({"id": "bad-lat", "lat": 123.0, "lon": lon, "accuracy_m": 10}))
reports.append(json.dumps({"id": "no-accuracy", "lat": lat, "lon": lon}))
reports.append(json.dumps({"id": "bad-evidence", "lat": lat, "lon": lon, "accuracy_m": 10, "evidence": "wifi"}))
reports.append('{"id": "truncated", "lat": 4')

os.makedirs(dst, exist_ok=True)
open(os.path.join(dst, "sample-reports.jsonl"), "w").write("\n".join(reports) + "\n")
open(os.path.join(dst, "truth.jsonl"), "w").write("\n".join(truths) + "\n")
# Reference data in WGS84 (a report pipeline has no trace origin): local e/n → lat/lon.
ref = json.load(open(os.path.join(src, "reference.json")))
for ap in ref.get("aps", []):
    if "e" in ap:
        ap["lat"], ap["lon"] = offset(lat0, lon0, ap.pop("e"), ap.pop("n"))
        ap["h"] = ap.pop("u", 0)
json.dump(ref, open(os.path.join(dst, "reference.json"), "w"), indent=1)
print(f"{len(reports)} reports ({len(times)} with WiFi + IMU evidence) -> {dst}")
