//! The relational operators (src/ops.rs) against host references, on the CPU backend and, where
//! there is one, on the GPU: group-by with every aggregate (integer and float values, the
//! sentinel keys among the groups), joins with repeated and missing keys on either side, left
//! joins' unmatched rows, empty inputs, and the refusals.

mod common;

use common::*;
use std::collections::HashMap;
use warpmap::ops::{
    count_distinct, group_by, inner_join, left_join, Aggregate, AggregateColumn, Engine, JoinPairs,
    NO_MATCH,
};
use warpmap::{Error, Key, Reduce, Value};

/// The CPU backend, and the GPU where there is one.
fn engines() -> Vec<(&'static str, Engine)> {
    let mut v = vec![("cpu", Engine::Cpu)];
    if let Some(g) = gpu() {
        v.push(("gpu", Engine::Gpu(g)));
    }
    v
}

/// `n` keys from a pool of `distinct` (the two sentinel-like keys, all zeros and all ones,
/// among them), each row drawn at random.
fn keys_from_pool<K: Key>(rng: &mut SplitMix64, n: usize, distinct: usize) -> Vec<K> {
    let mut pool = unique_keys::<K>(rng, distinct.max(2) - 2, false);
    pool.push(K::from_bits(0));
    pool.push(K::from_bits(u64::MAX));
    (0..n).map(|_| pool[rng.index(pool.len())]).collect()
}

/// Group-by of every aggregate against a fold on the host; `wide` is a value as an f64.
/// Both with a `Mean` and without (on the GPU, without a `Mean`, or of `f64` values, the group-by
/// takes one pass over the rows; otherwise a table per aggregate).
fn group_by_matches<K: Key, V: Value>(keys: &[K], values: &[V], wide: impl Fn(V) -> f64) {
    use Aggregate::*;
    for aggregates in [&[Sum, Count, Min, Max, Mean][..], &[Max, Count, Sum, Min]] {
        group_by_matches_with(keys, values, &wide, aggregates);
    }
    let mut sorted: Vec<(K, V)> = keys.iter().copied().zip(values.iter().copied()).collect();
    sorted.sort_by_key(|p| p.0);
    let (k, v): (Vec<K>, Vec<V>) = sorted.into_iter().unzip();
    group_by_matches_with(&k, &v, &wide, &[Sum, Min, Count]); // sorted keys: by runs on the GPU
}

fn group_by_matches_with<K: Key, V: Value>(
    keys: &[K],
    values: &[V],
    wide: &impl Fn(V) -> f64,
    aggregates: &[Aggregate],
) {
    use Aggregate::*;
    let mut folded: HashMap<K, (V, u64, V, V, f64)> = HashMap::new();
    for (&k, &v) in keys.iter().zip(values) {
        folded
            .entry(k)
            .and_modify(|e| {
                e.0 = e.0.reduce(v, Reduce::Sum);
                e.1 += 1;
                e.2 = e.2.reduce(v, Reduce::Min);
                e.3 = e.3.reduce(v, Reduce::Max);
                e.4 += wide(v);
            })
            .or_insert((v, 1, v, v, wide(v)));
    }
    for (name, engine) in engines() {
        let what = format!("{name} {}/{}", K::NAME, V::NAME);
        let g = group_by(&engine, keys, values, aggregates).unwrap();
        assert_eq!(g.keys.len(), folded.len(), "{what}: groups");
        assert_eq!(g.columns.len(), aggregates.len(), "{what}: columns");
        for (i, k) in g.keys.iter().enumerate() {
            let e = folded
                .get(k)
                .unwrap_or_else(|| panic!("{what}: group {k:?} has no rows"));
            for (a, column) in aggregates.iter().zip(&g.columns) {
                match (a, column) {
                    (Sum, AggregateColumn::Values(v)) => assert_eq!(v[i], e.0, "{what}: sum {k:?}"),
                    (Count, AggregateColumn::Counts(c)) => {
                        assert_eq!(c[i], e.1, "{what}: count {k:?}")
                    }
                    (Min, AggregateColumn::Values(v)) => assert_eq!(v[i], e.2, "{what}: min {k:?}"),
                    (Max, AggregateColumn::Values(v)) => assert_eq!(v[i], e.3, "{what}: max {k:?}"),
                    (Mean, AggregateColumn::Means(m)) => {
                        assert_eq!(m[i], e.4 / e.1 as f64, "{what}: mean {k:?}")
                    }
                    (a, c) => panic!("{what}: {a:?} came as {c:?}"),
                }
            }
        }
        // Nothing in, nothing out.
        let empty = group_by::<K, V>(&engine, &[], &[], aggregates).unwrap();
        assert!(empty.keys.is_empty(), "{what}: no rows, no groups");
    }
}

#[test]
fn group_by_every_aggregate() {
    let mut rng = SplitMix64::new(0x6_b0b1);
    let n = 20_000;
    let keys = keys_from_pool::<u32>(&mut rng, n, 700);
    let v: Vec<u32> = (0..n).map(|_| rng.below(1000) as u32).collect();
    group_by_matches(&keys, &v, |x| x as f64);
    let keys = keys_from_pool::<u64>(&mut rng, n, 3000);
    let v: Vec<i64> = (0..n).map(|_| rng.below(2001) as i64 - 1000).collect();
    group_by_matches(&keys, &v, |x| x as f64);
    // Integers whose sum could wrap (count × the largest magnitude past i64::MAX): a Mean of
    // them takes a table per aggregate (sums in f64) on the GPU; multiples of 2^42, so every f64
    // sum is exact in any order.
    let keys = keys_from_pool::<u64>(&mut rng, n, 50);
    let v: Vec<i64> = (0..n)
        .map(|_| (rng.below(1 << 21) as i64 - (1 << 20)) << 42)
        .collect();
    group_by_matches(&keys, &v, |x| x as f64);
    // Whole floats: every order of the additions gives the same sum.
    let keys = keys_from_pool::<u32>(&mut rng, n, 50);
    let v: Vec<f32> = (0..n).map(|_| rng.below(200) as f32 - 100.0).collect();
    group_by_matches(&keys, &v, |x| x as f64);
    let v: Vec<f64> = (0..n).map(|_| rng.below(1 << 20) as f64).collect();
    group_by_matches(&keys, &v, |x| x);
}

#[test]
fn group_by_refusals() {
    for (name, engine) in engines() {
        let e = group_by(&engine, &[1u32, 2], &[1u32], &[Aggregate::Sum]);
        assert!(
            matches!(e, Err(Error::InvalidInput(_))),
            "{name}: lengths: {e:?}"
        );
        let wide = [[0u8; 16], [1u8; 16]];
        let e = group_by(&engine, &[1u32, 2], &wide, &[Aggregate::Max]);
        assert!(
            matches!(e, Err(Error::Unsupported(_))),
            "{name}: non-numeric: {e:?}"
        );
        // COUNT takes any values.
        let g = group_by(&engine, &[1u32, 2, 1], &[wide[0]; 3], &[Aggregate::Count]).unwrap();
        assert_eq!(g.keys.len(), 2, "{name}: count of non-numeric values");
    }
}

/// The pairs as (build row, probe row), sorted.
fn sorted(p: &JoinPairs) -> Vec<(u32, u32)> {
    assert_eq!(p.build.len(), p.probe.len(), "pairs of equal length");
    let mut v: Vec<(u32, u32)> = p
        .build
        .iter()
        .copied()
        .zip(p.probe.iter().copied())
        .collect();
    v.sort_unstable();
    v
}

/// The join by nested rows on the host: (right row, left row) for equal keys; with
/// `keep_unmatched`, (NO_MATCH, left row) for each left row without a match.
fn reference<K: Key>(left: &[K], right: &[K], keep_unmatched: bool) -> Vec<(u32, u32)> {
    let mut rows_of: HashMap<K, Vec<u32>> = HashMap::new();
    for (j, &k) in right.iter().enumerate() {
        rows_of.entry(k).or_default().push(j as u32);
    }
    let mut v = Vec::new();
    for (i, k) in left.iter().enumerate() {
        match rows_of.get(k) {
            Some(rows) => v.extend(rows.iter().map(|&j| (j, i as u32))),
            None if keep_unmatched => v.push((NO_MATCH, i as u32)),
            None => {}
        }
    }
    v.sort_unstable();
    v
}

fn joins_match<K: Key>(left: &[K], right: &[K], what: &str) {
    for (name, engine) in engines() {
        let inner = inner_join(&engine, left, right).unwrap();
        assert_eq!(
            sorted(&inner),
            reference(left, right, false),
            "{name} {what}: inner join"
        );
        let outer = left_join(&engine, left, right).unwrap();
        assert_eq!(
            sorted(&outer),
            reference(left, right, true),
            "{name} {what}: left join"
        );
        // Pairs in probe-row order.
        assert!(
            outer.probe.windows(2).all(|w| w[0] <= w[1]),
            "{name} {what}: left join in left-row order"
        );
    }
}

#[test]
fn joins_with_unique_repeated_and_missing_keys() {
    let mut rng = SplitMix64::new(0x10_1ae);
    // Unique build keys (a dimension table), some probe keys missing, sentinels included.
    let mut right = unique_keys::<u32>(&mut rng, 3000, true);
    right.truncate(3000);
    let mut left: Vec<u32> = (0..5000).map(|_| right[rng.index(right.len())]).collect();
    left.extend(unique_keys::<u32>(&mut rng, 500, false));
    joins_match(&left, &right, "unique right keys");
    // Repeats on both sides: the multimap path (and the sides swapped for the inner join).
    let left = keys_from_pool::<u64>(&mut rng, 4000, 900);
    let right = keys_from_pool::<u64>(&mut rng, 1500, 1200);
    joins_match(&left, &right, "repeated keys");
    joins_match(&right, &left, "repeated keys, sides swapped");
    // Empty sides.
    joins_match::<u32>(&[], &[1, 2, 2], "empty left");
    joins_match::<u32>(&[1, 2, 2], &[], "empty right");
    joins_match::<u32>(&[], &[], "both empty");
}

#[test]
fn distinct_counts() {
    let mut rng = SplitMix64::new(0xd15_71c7);
    let keys = keys_from_pool::<u64>(&mut rng, 10_000, 2500);
    let want = keys.iter().collect::<std::collections::HashSet<_>>().len();
    for (name, engine) in engines() {
        assert_eq!(count_distinct(&engine, &keys).unwrap(), want, "{name}");
        assert_eq!(
            count_distinct::<u32>(&engine, &[]).unwrap(),
            0,
            "{name}: empty"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// ops::device: the same operators on device-resident columns (GPU only).

mod device {
    use super::*;
    use warpmap::ops::device::{
        count_kmers, estimate_distinct, group_by, group_by_sums, kmers, row_numbers, sum_found,
        HashJoin, NOT_A_KMER,
    };
    use warpmap::HashTable;
    use warpmap::Numeric;

    #[test]
    fn the_pools_high_water_mark_sees_a_freed_temporary() {
        let Some(g) = gpu() else { return };
        g.synchronize().unwrap();
        let Some(at_start) = g.reset_pool_used_high() else {
            return; // no stream-ordered pool: nothing to read
        };
        let temporary = g.alloc::<u8>(64 << 20).unwrap();
        drop(temporary);
        g.synchronize().unwrap();
        let high = g.pool_used_high_since_reset().expect("a pool");
        assert!(
            high >= at_start + (64 << 20),
            "high {high}, at start {at_start}"
        );
        // A reset forgets it.
        g.synchronize().unwrap();
        let now = g.reset_pool_used_high().unwrap();
        assert!(g.pool_used_high_since_reset().unwrap() < now + (64 << 20));
    }

    #[test]
    fn row_numbers_count_from_start() {
        let Some(g) = gpu() else { return };
        for (n, start) in [(0usize, 0u32), (1, 7), (1000, 0), (100_003, 5)] {
            let got = g.download(&row_numbers(&g, n, start).unwrap()).unwrap();
            assert_eq!(got, (start..start + n as u32).collect::<Vec<_>>());
        }
        assert!(matches!(
            row_numbers(&g, 10, u32::MAX - 3),
            Err(Error::InvalidInput(_))
        ));
    }

    #[test]
    fn hash_join_matches_a_host_join() {
        let Some(g) = gpu() else { return };
        let mut rng = SplitMix64::new(11);
        for (builds, probes) in [
            (0usize, 10usize),
            (10, 0),
            (1000, 5000),
            (200_000, 1_000_000),
            (50_000, 777_777),
        ] {
            // Distinct build keys (sentinel-like ones among them), probes half present.
            let mut build = unique_keys::<u64>(&mut rng, builds, true);
            build.truncate(builds);
            let absent = unique_keys::<u64>(&mut rng, probes, false);
            let set: HashMap<u64, usize> = build.iter().enumerate().map(|(i, &k)| (k, i)).collect();
            let probe: Vec<u64> = (0..probes)
                .map(|i| {
                    if !build.is_empty() && i % 2 == 0 {
                        build[rng.index(build.len())]
                    } else {
                        absent[i]
                    }
                })
                .collect();
            let mut probe = probe;
            if probes % 2 == 0 {
                // Clustered probe keys (a fact table sorted on its foreign key): runs of equal
                // keys, which a probe looks up once.
                probe.sort_unstable();
            }
            let price: Vec<i64> = (0..probes).map(|i| i as i64 * 3 - 1000).collect();
            let join = HashJoin::build(&g, &g.upload(&build).unwrap()).unwrap();
            assert_eq!(join.build_rows().unwrap(), builds);
            let m = join.probe(&g.upload(&probe).unwrap()).unwrap();
            let (rows, found, build_rows) = (
                g.download(&m.probe_row).unwrap(),
                g.download(&m.found).unwrap(),
                g.download(&m.build_row).unwrap(),
            );
            let mut seen = vec![false; probes];
            for i in 0..probes {
                let r = rows[i] as usize;
                assert!(!seen[r], "probe row {r} twice");
                seen[r] = true;
                match set.get(&probe[r]) {
                    Some(&b) => assert_eq!((found[i], build_rows[i] as usize), (1, b)),
                    None => assert_eq!(found[i], 0, "probe row {r} matched an absent key"),
                }
            }
            let want: (u64, i64) = probe
                .iter()
                .zip(&price)
                .filter(|(k, _)| set.contains_key(k))
                .fold((0, 0), |a, (_, &p)| (a.0 + 1, a.1 + p));
            let t = join.sum_matched(&m, &g.upload(&price).unwrap()).unwrap();
            assert_eq!((t.count, t.sum_signed()), want, "{builds} x {probes}");
            let (dk, dp) = (g.upload(&probe).unwrap(), g.upload(&price).unwrap());
            let t = join.probe_sum(&dk, &dp).unwrap();
            assert_eq!(
                (t.count, t.sum_signed()),
                want,
                "{builds} x {probes}: probe_sum"
            );
        }
        // Repeated build keys are refused, and keys wider than 8 bytes.
        let twice = g.upload(&[1u32, 2, 1]).unwrap();
        assert!(matches!(
            HashJoin::build(&g, &twice),
            Err(Error::Unsupported(_))
        ));
        let wide = g.upload(&[1u128, 2]).unwrap();
        assert!(matches!(
            HashJoin::build(&g, &wide),
            Err(Error::Unsupported(_))
        ));
        // Build keys that fill their range (the range map) and that crowd it (the hash again),
        // probed with keys inside, below and above the range.
        for build in [
            (0..100_000u32).map(|i| 500 + 3 * i).collect::<Vec<_>>(),
            (0..100_000u32).chain([1_600_000]).collect::<Vec<_>>(),
        ] {
            let join = HashJoin::build(&g, &g.upload(&build).unwrap()).unwrap();
            let set: HashMap<u32, u32> = build
                .iter()
                .enumerate()
                .map(|(i, &k)| (k, i as u32))
                .collect();
            let probe: Vec<u32> = (0..400_000u32).map(|i| i * 5 % 2_000_000).collect();
            let m = join.probe(&g.upload(&probe).unwrap()).unwrap();
            let (found, rows) = (
                g.download(&m.found).unwrap(),
                g.download(&m.build_row).unwrap(),
            );
            for (i, k) in probe.iter().enumerate() {
                match set.get(k) {
                    Some(&r) => assert_eq!((found[i], rows[i]), (1, r), "key {k}"),
                    None => assert_eq!(found[i], 0, "key {k}"),
                }
            }
        }
        // u32 keys, the largest among them.
        let build = g.upload(&[u32::MAX, 0, 5]).unwrap();
        let join = HashJoin::build(&g, &build).unwrap();
        let probe = g.upload(&[5u32, 5, u32::MAX, 6, 0, u32::MAX - 1]).unwrap();
        let m = join.probe(&probe).unwrap();
        assert_eq!(g.download(&m.found).unwrap(), vec![1, 1, 1, 0, 1, 0]);
        assert_eq!(
            g.download(&m.build_row).unwrap(),
            vec![2, 2, 0, u32::MAX, 1, u32::MAX]
        );
    }

    #[test]
    fn sum_found_widths_and_refusals() {
        let Some(g) = gpu() else { return };
        let found = g.upload(&[1u8, 0, 1, 1]).unwrap();
        let v32 = g.upload(&[-5i32, 100, 7, -1]).unwrap();
        assert_eq!(sum_found(&g, &found, None, &v32).unwrap().sum_signed(), 1);
        let u32s = g.upload(&[u32::MAX, 1, 1, 0]).unwrap();
        assert_eq!(
            sum_found(&g, &found, None, &u32s).unwrap().sum_bits,
            u32::MAX as u64 + 1
        );
        let index = g.upload(&[3u32, 0, 0, 2]).unwrap();
        let t = sum_found(&g, &found, Some(&index), &v32).unwrap();
        assert_eq!((t.count, t.sum_signed()), (3, -1 - 5 + 7));
        let floats = g.upload(&[1.0f32; 4]).unwrap();
        assert!(matches!(
            sum_found(&g, &found, None, &floats),
            Err(Error::Unsupported(_))
        ));
        let short = g.upload(&[1i64]).unwrap();
        assert!(matches!(
            sum_found(&g, &found, None, &short),
            Err(Error::InvalidInput(_))
        ));
    }

    /// The device group-by of `keys` with every reduction of `values` and a count, against a
    /// fold on the host; `hint` sizes its table (too small a hint takes the resize path).
    fn device_group_by_matches<K: Key, V: Value>(
        g: &std::sync::Arc<warpmap::Gpu>,
        keys: &[K],
        values: &[V],
        hint: Option<usize>,
        what: &str,
    ) {
        let ops = [Reduce::Sum, Reduce::Min, Reduce::Max];
        let mut folded: HashMap<K, (Vec<V>, u64)> = HashMap::new();
        for (&k, &v) in keys.iter().zip(values) {
            let e = folded.entry(k).or_insert_with(|| (Vec::new(), 0));
            if e.0.is_empty() {
                e.0 = vec![v; ops.len()];
            } else {
                for (acc, &op) in e.0.iter_mut().zip(&ops) {
                    *acc = acc.reduce(v, op);
                }
            }
            e.1 += 1;
        }
        let (dk, dv) = (g.upload(keys).unwrap(), g.upload(values).unwrap());
        let columns: Vec<_> = ops.iter().map(|&op| (&dv, op)).collect();
        let gr = group_by(g, &dk, &columns, true, hint).unwrap();
        let k = g.download(&gr.keys).unwrap();
        let cols: Vec<Vec<V>> = gr.values.iter().map(|c| g.download(c).unwrap()).collect();
        let counts = g.download(gr.counts.as_ref().unwrap()).unwrap();
        assert_eq!(k.len(), folded.len(), "{what}: groups");
        let mut seen = std::collections::HashSet::new();
        for i in 0..k.len() {
            assert!(seen.insert(k[i]), "{what}: group {:?} twice", k[i]);
            let (want, rows) = &folded[&k[i]];
            assert_eq!(counts[i], *rows, "{what}: count of {:?}", k[i]);
            for (j, op) in ops.iter().enumerate() {
                let got = cols[j][i];
                // Float sums add in another order than the host's: compare them loosely.
                let close = match (got.to_f64(), want[j].to_f64(), op) {
                    (Some(a), Some(b), Reduce::Sum) if V::NUMERIC == Some(Numeric::Float) => {
                        (a - b).abs() <= 1e-3 * (1.0 + b.abs())
                    }
                    _ => got == want[j],
                };
                assert!(
                    close,
                    "{what}: {op:?} of {:?}: {got:?}, want {:?}",
                    k[i], want[j]
                );
            }
        }
    }

    #[test]
    fn group_by_matches_a_host_fold() {
        let Some(g) = gpu() else { return };
        let mut rng = SplitMix64::new(12);
        // (rows, distinct keys, sorted, hint): one group, few (a block's shared table), many,
        // runs of repeats (sorted), a hint far too small (the table is sized again).
        let shapes = [
            (1usize, 1usize, false, None),
            (5000, 3, false, None),
            (100_000, 700, false, None),
            (200_000, 3000, true, None),
            (400_000, 40_000, false, Some(40_000)),
            (300_000, 100_000, true, None),
            (300_000, 50_000, false, Some(10)),
        ];
        for (rows, distinct, sorted, hint) in shapes {
            let what = format!("{rows} rows, {distinct} keys, sorted {sorted}, hint {hint:?}");
            let mut k32 = keys_from_pool::<u32>(&mut rng, rows, distinct);
            let mut k64 = keys_from_pool::<u64>(&mut rng, rows, distinct);
            if sorted {
                k32.sort_unstable();
                k64.sort_unstable();
            }
            let vi: Vec<i64> = (0..rows).map(|_| rng.next_u64() as i64 >> 3).collect();
            let vu: Vec<u32> = (0..rows).map(|_| rng.next_u64() as u32).collect();
            let vf: Vec<f64> = (0..rows)
                .map(|_| rng.next_u64() as f64 / 1e15 - 9e3)
                .collect();
            let vs: Vec<f32> = (0..rows).map(|i| (i % 1000) as f32 - 500.0).collect();
            let vn: Vec<i32> = (0..rows).map(|_| rng.next_u64() as i32).collect();
            device_group_by_matches(&g, &k32, &vi, hint, &format!("{what}: u32 -> i64"));
            device_group_by_matches(&g, &k64, &vu, hint, &format!("{what}: u64 -> u32"));
            device_group_by_matches(&g, &k32, &vf, hint, &format!("{what}: u32 -> f64"));
            device_group_by_matches(&g, &k64, &vs, hint, &format!("{what}: u64 -> f32"));
            device_group_by_matches(&g, &k64, &vn, hint, &format!("{what}: u64 -> i32"));
        }
        // Keys that fill their range, in order (runs: no table) and shuffled (the range map),
        // and keys that crowd one end of a range they fill a sixteenth of (the range map gives
        // up, the hash takes them).
        let dense: Vec<u64> = (0..300_000u64).map(|i| 1000 + i / 3).collect();
        let mut shuffled = dense.clone();
        for i in (1..shuffled.len()).rev() {
            shuffled.swap(i, rng.index(i + 1));
        }
        let mut crowded: Vec<u64> = (0..200_000u64).map(|i| i / 2).collect();
        crowded.push(1_600_000);
        for i in (1..crowded.len()).rev() {
            crowded.swap(i, rng.index(i + 1)); // not sorted: the table, not the runs
        }
        for (keys, what) in [
            (&dense, "dense"),
            (&shuffled, "dense, shuffled"),
            (&crowded, "crowded"),
        ] {
            let v: Vec<i64> = (0..keys.len()).map(|i| i as i64 - 7).collect();
            device_group_by_matches(&g, keys, &v, None, what);
            let k32: Vec<u32> = keys.iter().map(|&k| k as u32).collect();
            device_group_by_matches(&g, &k32, &v, None, what);
        }
        // A float min / max over NaNs: a NaN loses to a number, and a group of NaNs is NaN.
        let (k, v) = (
            g.upload(&[1u32, 1, 2, 2]).unwrap(),
            g.upload(&[f32::NAN, 3.0, f32::NAN, f32::NAN]).unwrap(),
        );
        let gr = group_by(&g, &k, &[(&v, Reduce::Min), (&v, Reduce::Max)], false, None).unwrap();
        let keys = g.download(&gr.keys).unwrap();
        let (mins, maxs) = (
            g.download(&gr.values[0]).unwrap(),
            g.download(&gr.values[1]).unwrap(),
        );
        for i in 0..2 {
            if keys[i] == 1 {
                assert_eq!((mins[i], maxs[i]), (3.0, 3.0));
            } else {
                assert!(mins[i].is_nan() && maxs[i].is_nan());
            }
        }
        // Empty input, a count alone, refusals.
        let none = g.upload::<u64>(&[]).unwrap();
        let gr = group_by::<u64, u64>(&g, &none, &[], true, None).unwrap();
        assert_eq!((gr.keys.len(), gr.counts.unwrap().len()), (0, 0));
        let (k, v) = (g.upload(&[1u32, 2]).unwrap(), g.upload(&[1i64]).unwrap());
        assert!(matches!(
            group_by_sums(&g, &k, &[&v], None),
            Err(Error::InvalidInput(_))
        ));
        assert!(matches!(
            group_by_sums::<u32, i64>(&g, &k, &[], None),
            Err(Error::InvalidInput(_))
        ));
        let wide = g.upload(&[1u128, 2]).unwrap();
        let v2 = g.upload(&[1i64, 2]).unwrap();
        assert!(matches!(
            group_by_sums(&g, &wide, &[&v2], None),
            Err(Error::Unsupported(_))
        ));
    }

    #[test]
    fn group_by_sums_of_tpch_like_columns() {
        let Some(g) = gpu() else { return };
        let mut rng = SplitMix64::new(14);
        // Orders of 1-7 adjacent lines (lineitem on l_orderkey), two i64 sums.
        let mut keys = Vec::new();
        let mut order = 0u32;
        while keys.len() < 500_000 {
            order += 1 + rng.index(3) as u32;
            for _ in 0..1 + rng.index(7) {
                keys.push(order);
            }
        }
        let a: Vec<i64> = (0..keys.len()).map(|_| 1 + rng.index(50) as i64).collect();
        let b: Vec<i64> = (0..keys.len())
            .map(|_| rng.next_u64() as i64 >> 30)
            .collect();
        let mut folded: HashMap<u32, (i64, i64)> = HashMap::new();
        for i in 0..keys.len() {
            let e = folded.entry(keys[i]).or_default();
            e.0 += a[i];
            e.1 = e.1.wrapping_add(b[i]);
        }
        let (dk, da, db) = (
            g.upload(&keys).unwrap(),
            g.upload(&a).unwrap(),
            g.upload(&b).unwrap(),
        );
        let gr = group_by_sums(&g, &dk, &[&da, &db], None).unwrap();
        let (k, s0, s1) = (
            g.download(&gr.keys).unwrap(),
            g.download(&gr.values[0]).unwrap(),
            g.download(&gr.values[1]).unwrap(),
        );
        assert_eq!(k.len(), folded.len());
        for i in 0..k.len() {
            assert_eq!(folded.get(&k[i]), Some(&(s0[i], s1[i])), "group {}", k[i]);
        }
    }

    #[test]
    fn distinct_estimates_are_within_five_percent() {
        let Some(g) = gpu() else { return };
        let mut rng = SplitMix64::new(15);
        for distinct in [1usize, 10, 1000, 50_000, 2_000_000] {
            let keys = keys_from_pool::<u64>(&mut rng, distinct * 3, distinct);
            let exact = keys.iter().collect::<std::collections::HashSet<_>>().len() as f64;
            let est = estimate_distinct(&g, &g.upload(&keys).unwrap()).unwrap();
            assert!(
                (est - exact).abs() <= 0.05 * exact + 1.0,
                "{distinct}: estimate {est}, exact {exact}"
            );
        }
        assert_eq!(
            estimate_distinct(&g, &g.upload::<u32>(&[]).unwrap()).unwrap(),
            0.0
        );
    }

    /// The canonical k-mers of one read on the host (the example's encoding).
    fn host_canonical(read: &[u8], k: usize) -> Vec<u64> {
        let code = |b: u8| match b | 0x20 {
            b'a' => Some(0u64),
            b'c' => Some(1),
            b'g' => Some(2),
            b't' => Some(3),
            _ => None,
        };
        read.windows(k)
            .map(|w| {
                let codes: Option<Vec<u64>> = w.iter().map(|&b| code(b)).collect();
                match codes {
                    None => NOT_A_KMER,
                    Some(c) => {
                        let fwd = c.iter().fold(0u64, |a, &x| a << 2 | x);
                        let rev = c.iter().rev().fold(0u64, |a, &x| a << 2 | (3 - x));
                        fwd.min(rev)
                    }
                }
            })
            .collect()
    }

    #[test]
    fn kmers_across_read_boundaries_and_other_bases() {
        let Some(g) = gpu() else { return };
        let mut rng = SplitMix64::new(13);
        for (reads, len, k) in [
            (1usize, 31usize, 31usize),
            (3, 40, 31),
            (500, 150, 31),
            (64, 20, 1),
            (64, 33, 17),
        ] {
            let mut bases: Vec<u8> = (0..reads * len)
                .map(|_| b"ACGTacgt"[rng.index(8)])
                .collect();
            // A few bases that are not ACGT (N), which void their windows.
            for _ in 0..reads / 10 {
                let i = rng.index(bases.len());
                bases[i] = b'N';
            }
            let (keys, ones) = kmers(&g, &g.upload(&bases).unwrap(), reads, len, k).unwrap();
            let want: Vec<u64> = bases
                .chunks(len)
                .flat_map(|r| host_canonical(r, k))
                .collect();
            assert_eq!(
                g.download(&keys).unwrap(),
                want,
                "{reads} reads of {len}, k {k}"
            );
            assert!(g.download(&ones).unwrap().iter().all(|&o| o == 1));
            // Counted: the same as a host fold.
            let table = count_kmers(&g, &g.upload(&bases).unwrap(), reads, len, k, None).unwrap();
            let mut folded: HashMap<u64, u32> = HashMap::new();
            for &x in &want {
                *folded.entry(x).or_default() += 1;
            }
            let (tk, tv) = table.retrieve_all().unwrap();
            assert_eq!(tk.len(), folded.len());
            for (x, c) in tk.iter().zip(&tv) {
                assert_eq!(folded.get(x), Some(c));
            }
        }
        let b = g.upload(&[b'A'; 10]).unwrap();
        for (reads, len, k) in [(1, 10, 0), (1, 10, 32), (1, 10, 11), (2, 10, 5)] {
            assert!(
                matches!(kmers(&g, &b, reads, len, k), Err(Error::InvalidInput(_))),
                "{reads} {len} {k}"
            );
        }
    }
}
