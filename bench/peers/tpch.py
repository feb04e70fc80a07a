#!/usr/bin/env python3
"""The peers of `warpmap workload tpch`, on the same rows: PyTorch on the GPU (what a GPU user
writes without a hash table: a join by sort + searchsorted, a group-by by unique + index_add),
DuckDB and Polars on all cores. Each answer is checked against warpmap's (answers.json).

Usage: bench/peers/tpch.py DIR [--runs 3] [--json OUT] [--engines torch,duckdb,polars]

DIR is what `warpmap workload tpch --sf N --export DIR` wrote: raw little-endian columns
(o_orderkey, l_orderkey, l_suppkey as u32; l_quantity, l_extendedprice as i64, the price in
cents) and answers.json. The columns are written to Parquet (pyarrow) and each CPU engine loads
them into its own memory before any clock starts; PyTorch gets them as device tensors (int32
keys, int64 values: the dtypes warpmap's device path uses), also before the clock. Each query:
one untimed warm-up, then the median of the runs' wall times (PyTorch: torch.cuda.synchronize()
at the end of each). An engine that is not installed is skipped and said so.
"""
import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

QUERIES = ("join", "groupby_orderkey", "groupby_suppkey")


def load(dir_):
    col = lambda name, dt: np.fromfile(os.path.join(dir_, name), dtype=dt)
    cols = {
        "o_orderkey": col("o_orderkey.u32.bin", np.uint32),
        "l_orderkey": col("l_orderkey.u32.bin", np.uint32),
        "l_suppkey": col("l_suppkey.u32.bin", np.uint32),
        "l_quantity": col("l_quantity.i64.bin", np.int64),
        "l_extendedprice": col("l_extendedprice.i64.bin", np.int64),
    }
    with open(os.path.join(dir_, "answers.json")) as f:
        answers = json.load(f)
    return cols, answers


def checksums(keys, qty, price):
    """As warpmap's group_checksums: groups, the sums' totals, a key-weighted sum (wrapping)."""
    keys = np.asarray(keys).astype(np.uint64)
    qty = np.asarray(qty).astype(np.int64)
    price = np.asarray(price).astype(np.int64)
    with np.errstate(over="ignore"):
        mixed = price.view(np.uint64) ^ (qty.view(np.uint64) << np.uint64(40))
        w = int(np.sum(keys * mixed, dtype=np.uint64))
    return {
        "groups": int(len(keys)),
        "sum_quantity": int(np.sum(qty)),
        "sum_extendedprice": int(np.sum(price)),
        "weighted": str(w),
    }


def timed(runs, fn, sync=lambda: None):
    fn()
    sync()
    times, out = [], None
    for _ in range(runs):
        t = time.perf_counter()
        out = fn()
        sync()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times), out


def run_torch(cols, runs):
    import torch

    dev = torch.device("cuda")
    t = {k: torch.from_numpy(v.astype(np.int32) if v.dtype == np.uint32 else v).to(dev) for k, v in cols.items()}
    torch.cuda.synchronize()
    sync = torch.cuda.synchronize

    def join():
        build, _ = torch.sort(t["o_orderkey"])
        probe = t["l_orderkey"]
        idx = torch.searchsorted(build, probe).clamp_(max=build.numel() - 1)
        match = build[idx] == probe
        return int(match.sum().item()), int(t["l_extendedprice"][match].sum().item())

    def groupby(key):
        def q():
            uniq, inv = torch.unique(t[key], return_inverse=True)
            qs = torch.zeros(uniq.numel(), dtype=torch.int64, device=dev).index_add_(0, inv, t["l_quantity"])
            ps = torch.zeros(uniq.numel(), dtype=torch.int64, device=dev).index_add_(0, inv, t["l_extendedprice"])
            return uniq, qs, ps
        return q

    out = {}
    ms, (count, s) = timed(runs, join, sync)
    out["join"] = (ms, {"count": count, "sum_extendedprice": s})
    for q, key in (("groupby_orderkey", "l_orderkey"), ("groupby_suppkey", "l_suppkey")):
        ms, (u, qs, ps) = timed(runs, groupby(key), sync)
        out[q] = (ms, checksums(u.cpu().numpy().astype(np.uint32), qs.cpu().numpy(), ps.cpu().numpy()))
    return torch.__version__, out


def parquet(cols, dir_):
    import pyarrow as pa
    import pyarrow.parquet as pq

    li = os.path.join(dir_, "lineitem.parquet")
    od = os.path.join(dir_, "orders.parquet")
    if not os.path.exists(li):
        pq.write_table(pa.table({k: cols[k] for k in ("l_orderkey", "l_suppkey", "l_quantity", "l_extendedprice")}), li)
        pq.write_table(pa.table({"o_orderkey": cols["o_orderkey"]}), od)
    return li, od


def run_duckdb(li, od, runs):
    import duckdb

    con = duckdb.connect()
    con.execute(f"SET threads TO {os.cpu_count()}")
    con.execute(f"CREATE TABLE lineitem AS SELECT * FROM read_parquet('{li}')")
    con.execute(f"CREATE TABLE orders AS SELECT * FROM read_parquet('{od}')")
    out = {}
    ms, r = timed(runs, lambda: con.execute(
        "SELECT COUNT(*), SUM(l_extendedprice) FROM lineitem JOIN orders ON l_orderkey = o_orderkey").fetchone())
    out["join"] = (ms, {"count": int(r[0]), "sum_extendedprice": int(r[1])})
    for q, key in (("groupby_orderkey", "l_orderkey"), ("groupby_suppkey", "l_suppkey")):
        sql = f"SELECT {key}, SUM(l_quantity), SUM(l_extendedprice) FROM lineitem GROUP BY {key}"
        ms, r = timed(runs, lambda: con.execute(sql).fetchnumpy())
        vals = list(r.values())
        out[q] = (ms, checksums(vals[0], vals[1], vals[2]))
    return duckdb.__version__, out


def run_polars(li, od, runs):
    import polars as pl

    l = pl.read_parquet(li)
    o = pl.read_parquet(od)
    out = {}

    def join():
        # Lazy, so that the join's rows are aggregated, not materialized (as the SQL engines do).
        j = (l.lazy().join(o.lazy(), left_on="l_orderkey", right_on="o_orderkey", how="inner")
             .select(pl.len().alias("n"), pl.col("l_extendedprice").sum().alias("s")).collect())
        return int(j["n"][0]), int(j["s"][0])

    ms, (count, s) = timed(runs, join)
    out["join"] = (ms, {"count": count, "sum_extendedprice": s})
    for q, key in (("groupby_orderkey", "l_orderkey"), ("groupby_suppkey", "l_suppkey")):
        f = lambda: l.group_by(key).agg(pl.col("l_quantity").sum(), pl.col("l_extendedprice").sum())
        ms, r = timed(runs, f)
        out[q] = (ms, checksums(r[key].to_numpy(), r["l_quantity"].to_numpy(), r["l_extendedprice"].to_numpy()))
    return pl.__version__, out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json", default=None)
    ap.add_argument("--engines", default="torch,duckdb,polars")
    a = ap.parse_args()
    cols, answers = load(a.dir)
    print(f"{len(cols['l_orderkey'])} lineitems, {len(cols['o_orderkey'])} orders; {os.cpu_count()} cores")
    results, ok = [], True
    li = od = None
    for engine in a.engines.split(","):
        try:
            if engine == "torch":
                version, out = run_torch(cols, a.runs)
            else:
                if li is None:
                    li, od = parquet(cols, a.dir)
                version, out = (run_duckdb if engine == "duckdb" else run_polars)(li, od, a.runs)
        except ImportError as e:
            print(f"{engine}: not installed ({e}); skipped")
            results.append({"engine": engine, "skipped": str(e)})
            continue
        for q in QUERIES:
            ms, ans = out[q]
            want = answers[q] if q != "join" else answers["join"]
            correct = ans == want
            ok &= correct
            print(f"{engine:<7} {version:<12} {q:<18} {ms:9.2f} ms  {'ok' if correct else 'WRONG ' + json.dumps(ans)}")
            results.append({"engine": engine, "version": version, "query": q, "median_ms": ms,
                            "correct": correct, "answer": ans})
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"cores": os.cpu_count(), "runs": a.runs, "results": results,
                       "method": __doc__}, f, indent=2)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
