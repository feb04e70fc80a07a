#!/usr/bin/env python3
"""ab-compare.py — compares bench JSONs of two builds cell by cell (an A/B run on one device).

Usage: scripts/ab-compare.py BASE.json [BASE2.json ...] -- NEW.json [NEW2.json ...]
A cell is (scheme, key/value types, group size or ticket bits/location, load factor, op). With
several files per side, each cell takes its best (highest G/s) run on that side, so that one
noisy run does not decide. Prints one line per cell: base G/s, new G/s, new/base, and a
summary (cells below 0.97, the worst cell). Exits 0; reading the numbers is the reader's job.
"""
import json, sys

def cells(paths):
    out = {}
    for p in paths:
        for r in json.load(open(p))["results"]:
            if r.get("gops") is None:
                continue
            key = (r.get("scheme"), r.get("key_type"), r.get("value_type"), r.get("group_size"),
                   r.get("ticket_bits"), r.get("location"), r.get("distribution"),
                   r.get("load_factor"), r.get("op"))
            out[key] = max(out.get(key, 0.0), r["gops"])
    return out

def main(argv):
    if "--" not in argv:
        sys.exit(__doc__)
    i = argv.index("--")
    base, new = cells(argv[:i]), cells(argv[i + 1:])
    worst, low = None, 0
    print(f"{'cell':<70} {'base':>7} {'new':>7} {'new/base':>8}")
    for k in sorted(base, key=str):
        if k not in new:
            continue
        b, n = base[k], new[k]
        ratio = n / b if b else float("nan")
        name = " ".join(str(x) for x in k if x is not None)
        print(f"{name:<70} {b:7.3f} {n:7.3f} {ratio:8.3f}")
        low += ratio < 0.97
        if worst is None or ratio < worst[0]:
            worst = (ratio, name)
    print(f"cells: {len([k for k in base if k in new])}, below 0.97: {low}, worst: {worst}")

if __name__ == "__main__":
    main(sys.argv[1:])
