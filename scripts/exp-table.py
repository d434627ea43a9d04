#!/usr/bin/env python3
"""The 2^(k/128) table of Sources/Positioning/CFastExp/posfuse_exp.c, from its definition:
2^(k/N) = H[k]·(1 + T[k]) with H[k] the double nearest 2^(k/N) and T[k] the double nearest the
relative error (2^(k/N) − H[k]) / H[k]; entry 2k holds T[k]'s bits, entry 2k+1 H[k]'s bits minus
k << 45 (so that adding k << 45 for any integer k puts k div N into the exponent). Computed in
60-digit decimal arithmetic. Usage: scripts/exp-table.py > table (C initialiser lines)."""
import struct
from decimal import Decimal, getcontext
getcontext().prec = 60
N = 128
ln2 = Decimal(2).ln()
bits = lambda d: struct.unpack('<Q', struct.pack('<d', d))[0]
rows = []
for k in range(N):
    v = (Decimal(k) / N * ln2).exp()
    h = float(v)
    t = float((v - Decimal(h)) / Decimal(h))
    rows.append((bits(t), (bits(h) - (k << 45)) % 2**64))
for i in range(0, N, 2):
    print("    " + ", ".join("0x%016xULL, 0x%016xULL" % r for r in rows[i:i + 2]) + ",")
