#!/usr/bin/env python3
"""Collects the peer benchmarks' lines (bench/peers/gpu/harness.cuh prints them) and a warpmap
compare JSON of the same device call into one JSON and a table of each cell's best peer.

Usage: collect.py OUT.json WARPMAP_COMPARE.json PEER_LOG... [--meta KEY=VALUE ...]
Each peer line: peer NAME TYPE LOAD OP GOPS MEDIAN_MS RUNS verified|FAILED ACTUAL_LOAD
"""
import json
import sys


def main(argv):
    meta = {}
    args = []
    it = iter(argv[1:])
    for a in it:
        if a == "--meta":
            k, v = next(it).split("=", 1)
            meta[k] = v
        else:
            args.append(a)
    out, ours_path, logs = args[0], args[1], args[2:]
    rows = []
    for path in logs:
        with open(path) as f:
            for line in f:
                if not line.startswith("peer "):
                    continue
                _, name, typ, lf, op, gops, ms, runs, ver, actual = line.split()
                rows.append({
                    "scheme": name, "key_type": typ, "value_type": typ,
                    "load_factor": float(lf), "actual_load": float(actual), "op": op,
                    "gops": float(gops), "median_ms": float(ms), "runs": int(runs),
                    "verified": ver == "verified", "distribution": "unique",
                })
    with open(ours_path) as f:
        ours = json.load(f)
    best = {}
    for r in rows:
        if not r["verified"]:
            continue
        key = (r["key_type"], "%.2f" % r["load_factor"], r["op"])
        if key not in best or r["gops"] > best[key]["gops"]:
            best[key] = r
    cells = []
    for r in ours["results"]:
        key = (r["key_type"], "%.2f" % r["load_factor"], r["op"])
        if key in best:
            b = best[key]
            cells.append({
                "key_type": key[0], "load_factor": float(key[1]), "op": key[2],
                "warpmap_gops": r["gops"], "best_peer": b["scheme"], "best_peer_gops": b["gops"],
                "ratio": r["gops"] / b["gops"],
            })
    doc = {
        "device": ours.get("device"), "warpmap_commit": ours.get("commit"), "date": ours.get("date"),
        "method": "peers: bench/peers/gpu/harness.cuh (n = 2^27 unique keys, capacity n / load as "
                  "each peer rounds it, a fresh table per run, one warm-up then the median of 5, "
                  "CUDA events around the one bulk call, every run verified on the device); "
                  "warpmap: its compare preset in the same device call (its own method field)",
        **meta, "peers": rows, "cells": cells,
    }
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
    for typ in ("u32", "u64"):
        for op in ("insert", "find_hit", "find_miss"):
            line = [f"{typ} {op:9}"]
            for c in cells:
                if c["key_type"] == typ and c["op"] == op:
                    line.append(f"{c['warpmap_gops']:6.2f} / {c['best_peer_gops']:6.2f} "
                                f"{c['best_peer']:16} {c['ratio']:.2f}x")
            print(" | ".join(line))


if __name__ == "__main__":
    main(sys.argv)
