//! The `MultiMap` contract (see `src/table/mod.rs`), one test body run on every multimap backend
//! present (`common::multimap_backends`: the CPU multimap today), checked against a
//! `HashMap<K, Vec<V>>` oracle replaying the same operations. Values of one key are compared as
//! multisets: their order is unspecified (the CPU's insertion order is checked in
//! `tests/cpu_props.rs`).
//!
//! Every test is instantiated for several key/value types (the `contract!` modules), narrow and
//! wide.

mod common;

use common::*;
use std::collections::{HashMap, HashSet};
use warpmap::status::FAILURE_MASK;
use warpmap::{Error, InsertStatus, Key, Value};

/// A seed per test and type pair, so that each instantiation sees different keys.
fn seed_for<K: Key, V: Value>(test: u64) -> u64 {
    let name = format!("multimap {}/{}", K::NAME, V::NAME);
    name.bytes().fold(mix(test), |h, b| mix(h ^ b as u64))
}

/// Stores `keys[i] -> values[i]` in the oracle, for every `i` with `placed(i)`.
fn record<K: Key, V: Value>(
    oracle: &mut HashMap<K, Vec<V>>,
    keys: &[K],
    values: &[V],
    placed: impl Fn(usize) -> bool,
) {
    for (i, (k, v)) in keys.iter().zip(values).enumerate() {
        if placed(i) {
            oracle.entry(*k).or_default().push(*v);
        }
    }
}

/// Random batches of insert (many duplicate keys, some duplicate pairs), count, find_all,
/// erase_all and clear over a small pool (sentinel keys included), compared with the oracle.
fn random_ops<K: Key, V: Value>() {
    const CAP: usize = 1 << 13;
    for (name, mut m) in multimap_backends::<K, V>(CAP) {
        let mut rng = SplitMix64::new(seed_for::<K, V>(1));
        let pool = unique_keys::<K>(&mut rng, 200, true);
        let absent = unique_keys::<K>(&mut rng, 220, true)[200..].to_vec();
        let mut oracle: HashMap<K, Vec<V>> = HashMap::new();
        for round in 0..60u64 {
            let what = format!("{name}, round {round}");
            let n = rng.index(600);
            let batch: Vec<K> = (0..n)
                .map(|_| {
                    if rng.chance(0.9) {
                        pool[rng.index(pool.len())]
                    } else {
                        absent[rng.index(absent.len())]
                    }
                })
                .collect();
            let pairs: usize = oracle.values().map(Vec::len).sum();
            match rng.below(100) {
                0..=39 if pairs + n <= m.capacity() => {
                    // Values from a small set: equal pairs recur, and must all be stored.
                    let values: Vec<V> = batch
                        .iter()
                        .map(|&k| value_for(k, round % 3 + rng.below(2)))
                        .collect();
                    if rng.chance(0.5) {
                        let mut st = vec![InsertStatus(0xdead_beef); n];
                        let failed = m.insert_with_status(&batch, &values, &mut st).unwrap();
                        assert_eq!(failed, 0, "{what}: failures with room");
                        assert!(st.iter().all(|s| s.is_ok()), "{what}: statuses");
                    } else {
                        m.insert(&batch, &values)
                            .unwrap_or_else(|e| panic!("{what}: insert: {e}"));
                    }
                    record(&mut oracle, &batch, &values, |_| true);
                }
                0..=59 => {
                    let mut counts = vec![usize::MAX; n];
                    let total = m.count_into(&batch, &mut counts).unwrap();
                    let expect: Vec<usize> = batch
                        .iter()
                        .map(|k| oracle.get(k).map_or(0, Vec::len))
                        .collect();
                    assert_eq!(counts, expect, "{what}: count_into");
                    assert_eq!(total, expect.iter().sum::<usize>(), "{what}: count total");
                }
                60..=79 => {
                    let (offsets, values) = m.find_all(&batch).unwrap();
                    assert_eq!(offsets.len(), n + 1, "{what}: offsets");
                    assert_eq!(offsets[n], values.len(), "{what}: offsets end");
                    for (i, k) in batch.iter().enumerate() {
                        let want = oracle.get(k).map_or(&[][..], Vec::as_slice);
                        assert_eq!(
                            value_multiset(&values[offsets[i]..offsets[i + 1]]),
                            value_multiset(want),
                            "{what}: find_all of {k:?} (index {i})"
                        );
                    }
                }
                80..=96 => {
                    let distinct: HashSet<K> = batch.iter().copied().collect();
                    let expect: usize = distinct
                        .iter()
                        .map(|k| oracle.remove(k).map_or(0, |vs| vs.len()))
                        .sum();
                    assert_eq!(m.erase_all(&batch).unwrap(), expect, "{what}: erase_all");
                }
                97 => {
                    m.clear().unwrap();
                    oracle.clear();
                    assert!(m.capacity() >= CAP, "{what}: capacity after clear");
                }
                _ => assert_multimap_matches(&what, m.as_ref(), &oracle, &absent),
            }
            let pairs: usize = oracle.values().map(Vec::len).sum();
            assert_eq!(m.len().unwrap(), pairs, "{what}: len");
            assert_eq!(m.is_empty().unwrap(), pairs == 0, "{what}: is_empty");
        }
        assert_multimap_matches(&format!("{name} at the end"), m.as_ref(), &oracle, &absent);
    }
}

/// One key many times in one batch, with equal and with distinct values; a present key gets
/// more; then all of them go at once.
fn duplicates<K: Key, V: Value>() {
    const CAP: usize = 1 << 12;
    for (name, mut m) in multimap_backends::<K, V>(CAP) {
        let mut rng = SplitMix64::new(seed_for::<K, V>(2));
        let keys = unique_keys::<K>(&mut rng, 3, false);
        let (a, b, c) = (keys[0], keys[1], keys[2]);
        let mut oracle: HashMap<K, Vec<V>> = HashMap::new();
        let same = vec![a; 500];
        let same_values = vec![value_for::<K, V>(a, 0); 500];
        m.insert(&same, &same_values).unwrap();
        record(&mut oracle, &same, &same_values, |_| true);
        let distinct = vec![b; 300];
        let distinct_values: Vec<V> = (0..300).map(|i| V::from_bits(0x7700 + i)).collect();
        m.insert(&distinct, &distinct_values).unwrap();
        record(&mut oracle, &distinct, &distinct_values, |_| true);
        // The same batch again, interleaved with a third key.
        let mixed: Vec<K> = (0..400).map(|i| [a, b, c, c][i % 4]).collect();
        let mixed_values: Vec<V> = mixed.iter().map(|&k| value_for(k, 0)).collect();
        m.insert(&mixed, &mixed_values).unwrap();
        record(&mut oracle, &mixed, &mixed_values, |_| true);
        assert_eq!(m.count(&[a, b, c]).unwrap(), vec![600, 400, 200], "{name}");
        assert_multimap_matches(&name, m.as_ref(), &oracle, &[]);
        assert_eq!(m.erase_all(&[b, a, b]).unwrap(), 1000, "{name}: erase_all");
        oracle.remove(&a);
        oracle.remove(&b);
        assert_multimap_matches(
            &format!("{name} after erase_all"),
            m.as_ref(),
            &oracle,
            &[a, b],
        );
    }
}

/// Keys equal to the tables' internal sentinels (and 0, 1, and neighbours differing in their
/// last byte) are keys like any other, with several values each.
fn sentinel_keys_everywhere<K: Key, V: Value>() {
    const CAP: usize = 1 << 10;
    for (name, mut m) in multimap_backends::<K, V>(CAP) {
        let mut specials: Vec<K> = sentinel_keys::<K>().to_vec();
        specials.extend([K::from_bits(0), K::from_bits(1)]);
        let neighbours: Vec<K> = specials.iter().map(|&k| with_last_byte(k, 0x80)).collect();
        let mut oracle: HashMap<K, Vec<V>> = HashMap::new();
        for round in 0..3 {
            let values: Vec<V> = specials.iter().map(|&k| value_for(k, round)).collect();
            m.insert(&specials, &values).unwrap();
            record(&mut oracle, &specials, &values, |_| true);
        }
        assert_multimap_matches(&name, m.as_ref(), &oracle, &neighbours);
        let values: Vec<V> = neighbours.iter().map(|&k| value_for(k, 9)).collect();
        m.insert(&neighbours, &values).unwrap();
        record(&mut oracle, &neighbours, &values, |_| true);
        assert_eq!(m.erase_all(&specials[..2]).unwrap(), 6, "{name}: erase_all");
        for k in &specials[..2] {
            oracle.remove(k);
        }
        assert_multimap_matches(
            &format!("{name} after erasing the sentinels"),
            m.as_ref(),
            &oracle,
            &specials[..2],
        );
    }
}

/// Empty batches are no-ops; mismatched lengths are `InvalidInput` and change nothing.
fn empty_and_bad_input<K: Key, V: Value>() {
    for (name, mut m) in multimap_backends::<K, V>(100) {
        let mut rng = SplitMix64::new(seed_for::<K, V>(4));
        let keys = unique_keys::<K>(&mut rng, 3, true);
        let values: Vec<V> = keys.iter().map(|&k| value_for(k, 0)).collect();
        let mut oracle: HashMap<K, Vec<V>> = HashMap::new();
        for pass in 0..2 {
            let what = format!("{name}, pass {pass}");
            let invalid = |r: warpmap::Result<()>, call: &str| match r {
                Err(Error::InvalidInput(_)) => {}
                other => panic!("{what}: {call}: expected InvalidInput, got {other:?}"),
            };
            invalid(m.insert(&keys, &values[..2]), "insert with fewer values");
            invalid(m.insert(&keys[..2], &values), "insert with more values");
            let mut st = vec![InsertStatus::default(); 2];
            invalid(
                m.insert_with_status(&keys, &values, &mut st).map(drop),
                "status too short",
            );
            let mut st = vec![InsertStatus::default(); 4];
            invalid(
                m.insert_with_status(&keys, &values, &mut st).map(drop),
                "status too long",
            );
            invalid(
                m.count_into(&keys, &mut [0; 2]).map(drop),
                "counts too short",
            );
            invalid(
                m.count_into(&keys, &mut [0; 4]).map(drop),
                "counts too long",
            );

            m.insert(&[], &[]).unwrap();
            assert_eq!(
                m.insert_with_status(&[], &[], &mut []).unwrap(),
                0,
                "{what}"
            );
            assert_eq!(m.count(&[]).unwrap(), Vec::<usize>::new(), "{what}");
            assert_eq!(m.count_into(&[], &mut []).unwrap(), 0, "{what}");
            assert_eq!(m.contains(&[]).unwrap(), Vec::<bool>::new(), "{what}");
            assert_eq!(m.find_all(&[]).unwrap(), (vec![0], vec![]), "{what}");
            assert_eq!(m.erase_all(&[]).unwrap(), 0, "{what}");
            assert_multimap_matches(&what, m.as_ref(), &oracle, &keys);
            m.insert(&keys, &values).unwrap();
            record(&mut oracle, &keys, &values, |_| true);
        }
        // Capacity 0.
        assert!(matches!(
            warpmap::CpuMultiMap::<K, V>::new(0),
            Err(Error::InvalidInput(_))
        ));
    }
}

/// `erase_all` removes every pair of its keys (counted once for a key repeated in the batch),
/// `find_all` then finds none of them and all of the others, and a second `erase_all` removes
/// nothing; re-inserted keys have only their new values.
fn erase_all_then_find_all<K: Key, V: Value>() {
    const CAP: usize = 1 << 12;
    for (name, mut m) in multimap_backends::<K, V>(CAP) {
        let mut rng = SplitMix64::new(seed_for::<K, V>(5));
        let pool = unique_keys::<K>(&mut rng, 300, true);
        let keys: Vec<K> = (0..2000).map(|_| pool[rng.index(pool.len())]).collect();
        let values: Vec<V> = keys.iter().map(|&k| value_for(k, rng.below(4))).collect();
        m.insert(&keys, &values).unwrap();
        let mut oracle: HashMap<K, Vec<V>> = HashMap::new();
        record(&mut oracle, &keys, &values, |_| true);

        let gone: Vec<K> = pool.iter().copied().step_by(3).collect();
        let mut batch = gone.clone();
        batch.extend(gone.iter().step_by(2)); // some twice
        let expect: usize = gone.iter().map(|k| oracle.get(k).map_or(0, Vec::len)).sum();
        assert_eq!(
            m.erase_all(&batch).unwrap(),
            expect,
            "{name}: erase_all count"
        );
        for k in &gone {
            oracle.remove(k);
        }
        let (offsets, found) = m.find_all(&gone).unwrap();
        assert!(offsets.iter().all(|&o| o == 0), "{name}: erased keys found");
        assert!(found.is_empty(), "{name}");
        assert_multimap_matches(
            &format!("{name} after erase_all"),
            m.as_ref(),
            &oracle,
            &gone,
        );
        assert_eq!(m.erase_all(&batch).unwrap(), 0, "{name}: second erase_all");

        let again: Vec<V> = gone.iter().map(|&k| value_for(k, 7)).collect();
        m.insert(&gone, &again).unwrap();
        record(&mut oracle, &gone, &again, |_| true);
        assert_multimap_matches(&format!("{name} re-inserted"), m.as_ref(), &oracle, &[]);
    }
}

/// Beyond the capacity: a table of fixed capacity stores exactly `capacity()` pairs and reports
/// the rest (per pair, and as `TableFull`), and the reported pairs are not stored; a table that
/// grows itself stores them all and says so in `capacity()`.
fn full<K: Key, V: Value>() {
    for (name, mut m) in multimap_backends::<K, V>(1000) {
        let mut rng = SplitMix64::new(seed_for::<K, V>(6));
        let pool = unique_keys::<K>(&mut rng, 50, true);
        let cap = m.capacity();
        let n = cap + 100;
        let keys: Vec<K> = (0..n).map(|_| pool[rng.index(pool.len())]).collect();
        let values: Vec<V> = (0..n).map(|i| V::from_bits(i as u64)).collect();
        let mut st = vec![InsertStatus(0xdead_beef); n];
        let failed = m.insert_with_status(&keys, &values, &mut st).unwrap();
        let mut oracle: HashMap<K, Vec<V>> = HashMap::new();
        record(&mut oracle, &keys, &values, |i| st[i].is_ok());
        for s in &st {
            assert!(s.is_ok() || s.0 & FAILURE_MASK != 0, "{name}: status {s:?}");
        }
        assert_eq!(failed, st.iter().filter(|s| !s.is_ok()).count(), "{name}");
        if m.capacity() == cap {
            assert_eq!(failed, 100, "{name}: pairs refused beyond the capacity");
        } else {
            assert!(
                m.capacity() >= n - failed,
                "{name}: grew to {}",
                m.capacity()
            );
        }
        assert_multimap_matches(&format!("{name} full"), m.as_ref(), &oracle, &[]);
        if m.len().unwrap() == m.capacity() {
            match m.insert(&keys[..3], &values[..3]) {
                Err(Error::TableFull { failed, batch, .. }) => {
                    assert_eq!((failed, batch), (3, 3), "{name}: TableFull fields")
                }
                Ok(()) => assert!(m.capacity() > cap, "{name}: stored beyond the capacity"),
                Err(e) => panic!("{name}: insert into a full multimap: {e}"),
            }
        }
        // Room again after erase_all.
        let erased = m.erase_all(&pool[..10]).unwrap();
        for k in &pool[..10] {
            oracle.remove(k);
        }
        let more: Vec<K> = vec![pool[0]; erased];
        let more_values: Vec<V> = (0..erased)
            .map(|i| V::from_bits(1 << 40 | i as u64))
            .collect();
        m.insert(&more, &more_values)
            .unwrap_or_else(|e| panic!("{name}: refilling the erased room: {e}"));
        record(&mut oracle, &more, &more_values, |_| true);
        assert_multimap_matches(&format!("{name} refilled"), m.as_ref(), &oracle, &[]);
    }
}

macro_rules! contract {
    ($($module:ident: $k:ty, $v:ty;)*) => {$(
        mod $module {
            #[test]
            fn random_ops() {
                super::random_ops::<$k, $v>();
            }
            #[test]
            fn duplicates() {
                super::duplicates::<$k, $v>();
            }
            #[test]
            fn sentinel_keys() {
                super::sentinel_keys_everywhere::<$k, $v>();
            }
            #[test]
            fn empty_and_bad_input() {
                super::empty_and_bad_input::<$k, $v>();
            }
            #[test]
            fn erase_all_then_find_all() {
                super::erase_all_then_find_all::<$k, $v>();
            }
            #[test]
            fn full() {
                super::full::<$k, $v>();
            }
        }
    )*};
}

contract! {
    u32_u32: u32, u32;
    u64_u32: u64, u32;
    i32_i64: i32, i64;
    u64_u64: u64, u64;
    u128_u64: u128, u64;
    b16_u64: [u8; 16], u64;
    u64_b32: u64, [u8; 32];
}
