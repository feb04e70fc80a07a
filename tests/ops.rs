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
fn group_by_matches<K: Key, V: Value>(keys: &[K], values: &[V], wide: impl Fn(V) -> f64) {
    use Aggregate::*;
    let aggregates = [Sum, Count, Min, Max, Mean];
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
        let g = group_by(&engine, keys, values, &aggregates).unwrap();
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
        let empty = group_by::<K, V>(&engine, &[], &[], &aggregates).unwrap();
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
