#!/usr/bin/env python3
"""A stress variant of a GSDC drive folder, for checking that posfuse stays honest on a day
worse than the data it was fitted on (docs/fusion.md, "Stress variants of the dev drive").

One phone's chipset fixes are moved against its truth track: the error to the SPAN track
(`SPAN_<phone>_1Hz.nmea`, else the folder's only SPAN track) is scaled by K and a cross-track
bias of D metres is added to the right of the truth's direction of travel (the direction from
the truth 1 s before to 1 s after the fix, where the car moves faster than 2 m/s; while it
stands, the last direction). The reported accuracy (HDOP) and the receiver's speed and course
(RMC) are kept, so the phone reports the same accuracy and the same Doppler velocity while its
positions are wrong, as in the issue 21 drive (a cross-track bias of several metres at a
reported ~1 m accuracy). GGA and RMC positions of the same second get the same shift;
checksums are recomputed. Sentences without truth within the same second are copied as they are.

    scripts/gnss-stress-variant.py DRIVE_FOLDER PHONE D_m K OUT_FOLDER
    posfuse evaluate radio --test OUT_FOLDER

OUT_FOLDER gets `<PHONE>_chipset.nmea` and a symbolic link to the truth file. This is a
robustness check, never training data: the variants are not fitted on, and no option is chosen
from them.
"""
import math
import os
import sys


def degrees(lat, ns, lon, ew):
    def dm(v):
        v = float(v)
        d = int(v / 100)
        return d + (v - 100 * d) / 60
    a, b = dm(lat), dm(lon)
    return (a if ns == "N" else -a, b if ew == "E" else -b)


def nmea_fields(lat, lon):
    def dm(x, width):
        d = int(abs(x))
        return ("%0" + str(width) + "d%09.6f") % (d, (abs(x) - d) * 60)
    return dm(lat, 2), "N" if lat >= 0 else "S", dm(lon, 3), "E" if lon >= 0 else "W"


def checksum(body):
    c = 0
    for ch in body:
        c ^= ord(ch)
    return "%02X" % c


def seconds(hhmmss):
    return int(hhmmss[0:2]) * 3600 + int(hhmmss[2:4]) * 60 + float(hhmmss[4:])


def main():
    if len(sys.argv) != 6:
        sys.exit(__doc__)
    drive, phone, shift, scale, out = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
    spans = sorted(n for n in os.listdir(drive) if n.startswith("SPAN_") and n.endswith(".nmea"))
    own = [n for n in spans if n.startswith("SPAN_%s_" % phone)]
    if own:
        truth_file = own[0]
    elif len(spans) == 1:
        truth_file = spans[0]
    else:
        sys.exit("no truth track for %s among %s" % (phone, spans))
    truth = {}
    for line in open(os.path.join(drive, truth_file), errors="replace"):
        f = line.strip().split("*")[0].split(",")
        if f[0].endswith("GGA") and len(f) > 5 and f[1] and f[2]:
            truth[round(seconds(f[1]))] = degrees(f[2], f[3] or "N", f[4], f[5] or "W")
    if not truth:
        sys.exit("no GGA positions in " + truth_file)
    lat0 = math.radians(sum(p[0] for p in truth.values()) / len(truth))
    radius = 6378137.0

    def enu(p, q):  # q − p, metres east and north (local flat earth: the shifts are metres)
        return ((q[1] - p[1]) * math.radians(1) * radius * math.cos(lat0), (q[0] - p[0]) * math.radians(1) * radius)

    right = {}
    last = None
    for s in sorted(truth):
        a, b = truth.get(s - 1), truth.get(s + 1)
        if a and b:
            e, n = enu(a, b)
            v = math.hypot(e, n) / 2
            if v > 2.0:
                last = (n / (2 * v), -e / (2 * v))
        right[s] = last
    os.makedirs(out, exist_ok=True)
    link = os.path.join(out, truth_file)
    if not os.path.exists(link):
        os.symlink(os.path.abspath(os.path.join(drive, truth_file)), link)
    moved = 0
    with open(os.path.join(out, phone + "_chipset.nmea"), "w") as w:
        for line in open(os.path.join(drive, phone + "_chipset.nmea"), errors="replace"):
            text = line.strip()
            if not text.startswith("$"):
                w.write(line)
                continue
            f = text[1:].split("*")[0].split(",")
            i = 2 if f[0].endswith("GGA") else 3 if f[0].endswith("RMC") else None
            s = round(seconds(f[1])) if len(f) > 1 and f[1] else None
            if i is None or len(f) <= i + 3 or not f[i] or s not in truth:
                w.write(line)
                continue
            t = truth[s]
            e, n = enu(t, degrees(f[i], f[i + 1], f[i + 2], f[i + 3]))
            e, n = e * scale, n * scale
            if right.get(s):
                e, n = e + shift * right[s][0], n + shift * right[s][1]
            lat = t[0] + math.degrees(n / radius)
            lon = t[1] + math.degrees(e / (radius * math.cos(lat0)))
            f[i], f[i + 1], f[i + 2], f[i + 3] = nmea_fields(lat, lon)
            body = ",".join(f)
            w.write("$" + body + "*" + checksum(body) + "\n")
            moved += 1
    print("%s: %d positions moved (cross-track %.1f m, error x %.2f), truth %s" % (out, moved, shift, scale, truth_file))


if __name__ == "__main__":
    main()
