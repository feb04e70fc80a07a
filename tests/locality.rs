//! The locality-partitioned insert (src/table/engine/locality.rs): a device batch without
//! statuses is split by the top bits of each key's first window, then inserted in that order.
//! It must leave the table exactly as an insert in input order would: every key present once,
//! with one of its batch's values (or its old value under `IfAbsent`), sentinel keys included,
//! failures counted and reported. These tests force the path (`LocalityMode::On` and small
//! `Chunks`) on small tables, for several key and value widths and group sizes, and compare
//! against an oracle and against the same batches in input order; and the ordered calls that a
//! caller ordering its own batches makes (`stretch_order`, `insert_device_ordered_async`,
//! `find_device_ordered_async`). GPU only (skipped without
//! one, unless `WARPMAP_REQUIRE_GPU=1`).

mod common;

use common::*;
use std::collections::HashMap;
use warpmap::table::engine::multisplit::{multisplit_by, PartFunction};
use warpmap::table::warpdrive::LocalityMode;
use warpmap::{DeviceHashTable, Error, HashTable, InsertMode, Key, Reduce, Value, WarpDriveConfig};

/// A batch of `n` keys (the sentinels, 0 and 1 among them) with a tenth of them repeated with
/// other values, in a shuffled order; and each key's values in the batch.
fn batch_with_copies<K: Key, V: Value>(
    rng: &mut SplitMix64,
    n: usize,
    round: u64,
) -> (Vec<K>, Vec<V>, HashMap<K, Vec<V>>) {
    let unique = unique_keys::<K>(rng, n, true);
    let mut pairs: Vec<(K, V)> = unique.iter().map(|&k| (k, value_for(k, round))).collect();
    for &k in unique.iter().step_by(10) {
        pairs.push((k, value_for(k, round + 1000)));
    }
    shuffled_batch(rng, pairs)
}

/// `pairs` shuffled into a batch's keys and values, and each key's values in the batch.
fn shuffled_batch<K: Key, V: Value>(
    rng: &mut SplitMix64,
    mut pairs: Vec<(K, V)>,
) -> (Vec<K>, Vec<V>, HashMap<K, Vec<V>>) {
    for i in (1..pairs.len()).rev() {
        pairs.swap(i, rng.index(i + 1));
    }
    let mut of: HashMap<K, Vec<V>> = HashMap::new();
    for &(k, v) in &pairs {
        of.entry(k).or_default().push(v);
    }
    let (keys, values) = pairs.into_iter().unzip();
    (keys, values, of)
}

/// Queries: every key of `stored` and up to `n` absent ones, shuffled.
fn stored_and_absent<K: Key, V: Value>(
    rng: &mut SplitMix64,
    stored: &HashMap<K, V>,
    n: usize,
) -> Vec<K> {
    let mut queries: Vec<K> = stored.keys().copied().collect();
    queries.extend(
        unique_keys::<K>(rng, n, false)
            .into_iter()
            .filter(|k| !stored.contains_key(k)),
    );
    for i in (1..queries.len()).rev() {
        queries.swap(i, rng.index(i + 1));
    }
    queries
}

/// Inserts `keys` on the device without statuses, waits, and checks nothing was reported.
fn insert_device<K: Key, V: Value>(
    what: &str,
    t: &mut dyn DeviceHashTable<K, V>,
    keys: &[K],
    values: &[V],
    mode: InsertMode,
) {
    let gpu = t.gpu().clone();
    let (dk, dv) = (gpu.upload(keys).unwrap(), gpu.upload(values).unwrap());
    t.insert_device_async_with_mode(&dk, &dv, None, mode)
        .unwrap_or_else(|e| panic!("{what}: insert: {e}"));
    t.synchronize()
        .unwrap_or_else(|e| panic!("{what}: synchronize: {e}"));
}

/// Each key of `of` is present with one of its batch's values (or its value in `before`,
/// under `IfAbsent`), and nothing else is present.
fn check<K: Key, V: Value>(
    what: &str,
    t: &dyn HashTable<K, V>,
    of: &HashMap<K, Vec<V>>,
    before: &HashMap<K, V>,
    mode: InsertMode,
) -> HashMap<K, V> {
    let got = contents(what, t);
    let keys: Vec<&K> = of.keys().chain(before.keys()).collect();
    let distinct: std::collections::HashSet<&K> = keys.into_iter().collect();
    assert_eq!(got.len(), distinct.len(), "{what}: keys stored");
    for (k, vs) in of {
        let v = got
            .get(k)
            .unwrap_or_else(|| panic!("{what}: key {k:?} lost"));
        match (mode, before.get(k)) {
            (InsertMode::IfAbsent, Some(old)) => {
                assert_eq!(v, old, "{what}: {k:?} kept its value")
            }
            _ => assert!(
                vs.contains(v),
                "{what}: {k:?} holds {v:?}, not a batch value"
            ),
        }
    }
    for (k, v) in before {
        if !of.contains_key(k) {
            assert_eq!(got.get(k), Some(v), "{what}: untouched key {k:?}");
        }
    }
    got
}

fn partitioned_inserts_match<K: Key, V: Value>(g: u32, locality: LocalityMode) {
    let Some(gpu) = gpu() else { return };
    let name = format!("{}/{} g{g} {locality:?}", K::NAME, V::NAME);
    let config = WarpDriveConfig::new(1 << 14)
        .group_size(g)
        .locality(locality);
    let mut t = warpdrive::<K, V>(&gpu, config.clone());
    let mut reference = warpdrive::<K, V>(&gpu, config.locality(LocalityMode::Off));
    let mut rng = SplitMix64::new(mix(g as u64 + 77) ^ K::BYTES as u64);
    let n = t.capacity() * 6 / 10;

    // A first batch (Assign), with copies of keys.
    let (keys, values, of) = batch_with_copies::<K, V>(&mut rng, n, 1);
    let what = format!("{name}, first batch");
    insert_device(&what, &mut t, &keys, &values, InsertMode::Assign);
    insert_device(&what, &mut reference, &keys, &values, InsertMode::Assign);
    let first = check(&what, &t, &of, &HashMap::new(), InsertMode::Assign);
    let first_ref = contents(&what, &reference);
    let key_set = |m: &HashMap<K, V>| {
        let mut v: Vec<K> = m.keys().copied().collect();
        v.sort_by_key(|k| bytemuck::bytes_of(k).to_vec());
        v
    };
    assert_eq!(
        key_set(&first),
        key_set(&first_ref),
        "{what}: same keys as in input order"
    );

    // A second batch under IfAbsent: half of it keys already present (with new values), half new.
    let mut second: Vec<K> = first.keys().copied().step_by(2).collect();
    second.extend(
        unique_keys::<K>(&mut rng, n / 4, false)
            .into_iter()
            .filter(|k| !first.contains_key(k)),
    );
    let values2: Vec<V> = second.iter().map(|&k| value_for(k, 2)).collect();
    let of2: HashMap<K, Vec<V>> = second
        .iter()
        .zip(&values2)
        .map(|(&k, &v)| (k, vec![v]))
        .collect();
    let what = format!("{name}, IfAbsent batch");
    insert_device(&what, &mut t, &second, &values2, InsertMode::IfAbsent);
    let after = check(&what, &t, &of2, &first, InsertMode::IfAbsent);

    // The same keys again under Assign: every one takes its new value.
    let what = format!("{name}, Assign batch");
    insert_device(&what, &mut t, &second, &values2, InsertMode::Assign);
    let mut expected = after.clone();
    expected.extend(of2.iter().map(|(&k, v)| (k, v[0])));
    assert_matches(&what, &t, &expected);
    assert_eq!(t.len().unwrap(), expected.len(), "{what}: len");

    // Every other key erased (tombstones all over the chains), then every key inserted again
    // with a new value: each is stored once (an insert that meets a tombstone walks on to the
    // end of its chain before claiming it), the erased ones back.
    let what = format!("{name}, after erases");
    let mut all: Vec<K> = expected.keys().copied().collect();
    all.sort_by_key(|k| bytemuck::bytes_of(k).to_vec());
    let erased: Vec<K> = all.iter().copied().step_by(2).collect();
    assert_eq!(t.erase(&erased).unwrap(), erased.len(), "{what}: erased");
    let values3: Vec<V> = all.iter().map(|&k| value_for(k, 3)).collect();
    insert_device(&what, &mut t, &all, &values3, InsertMode::Assign);
    let again: HashMap<K, V> = all.iter().copied().zip(values3).collect();
    assert_matches(&what, &t, &again);
    assert_eq!(t.len().unwrap(), again.len(), "{what}: len");
}

/// More distinct keys than slots, without statuses: the failures are counted and reported by
/// `synchronize` as `TableFull`, and every key is either present or counted.
fn overflow_is_reported<K: Key, V: Value>() {
    let Some(gpu) = gpu() else { return };
    let name = format!("{}/{} overflow", K::NAME, V::NAME);
    let mut t = warpdrive::<K, V>(
        &gpu,
        WarpDriveConfig::new(1 << 12).locality(LocalityMode::Chunks(999)),
    );
    let mut rng = SplitMix64::new(mix(K::BYTES as u64 * 31 + V::BYTES as u64));
    let n = t.capacity() * 3 / 2;
    let keys = unique_keys::<K>(&mut rng, n, true);
    let values: Vec<V> = keys.iter().map(|&k| value_for(k, 0)).collect();
    let (dk, dv) = (gpu.upload(&keys).unwrap(), gpu.upload(&values).unwrap());
    t.insert_device_async(&dk, &dv, None).unwrap();
    let failed = match t.synchronize() {
        Err(Error::TableFull { failed, .. }) => failed,
        other => panic!("{name}: an overfull batch gave {other:?}"),
    };
    let len = t.len().unwrap();
    assert_eq!(len + failed, n, "{name}: stored + failed = batch");
    let present = t.find(&keys).unwrap();
    for ((k, v), p) in keys.iter().zip(&values).zip(&present) {
        if let Some(p) = p {
            assert_eq!(p, v, "{name}: value of {k:?}");
        }
    }
    assert_eq!(
        present.iter().filter(|p| p.is_some()).count(),
        len,
        "{name}: present keys"
    );
}

/// A caller that orders its batches itself (`stretch_order`, as the sharded table does): a batch
/// split by the table's order goes in through `insert_device_ordered_async` and is looked up
/// through `find_device_ordered_async` (values and contains), with the results of the plain
/// calls on the same batch and of the oracle. Windows of 16 slots have no ordered kernels: no
/// order is named, and the ordered calls still answer (the plain kernels).
fn ordered_calls_match<K: Key, V: Value>(g: u32) {
    let Some(gpu) = gpu() else { return };
    let name = format!("{}/{} g{g} ordered calls", K::NAME, V::NAME);
    let config = WarpDriveConfig::new(1 << 14)
        .group_size(g)
        .locality(LocalityMode::On);
    let mut t = warpdrive::<K, V>(&gpu, config);
    let mut rng = SplitMix64::new(mix(g as u64 * 13 + 5) ^ K::BYTES as u64);
    let n = t.capacity() * 6 / 10;
    let (keys, values, of) = batch_with_copies::<K, V>(&mut rng, n, 3);
    let order = t.stretch_order(keys.len());
    assert_eq!(
        order.is_some(),
        g <= 8,
        "{name}: an order where there are ordered kernels"
    );
    let order = order.unwrap_or(PartFunction::new(1, 0));
    let (dk, dv) = (gpu.upload(&keys).unwrap(), gpu.upload(&values).unwrap());
    let split = multisplit_by(&gpu, &dk, Some(&dv), &order).unwrap();
    let split_values = split.values.as_ref().unwrap();
    t.insert_device_ordered_async(&split.keys, split_values, InsertMode::Assign)
        .unwrap();
    t.synchronize().unwrap();
    let stored = check(&name, &t, &of, &HashMap::new(), InsertMode::Assign);

    // Queries: every stored key and as many absent ones, shuffled, then in the table's order.
    let queries = stored_and_absent(&mut rng, &stored, n);
    let dq = gpu.upload(&queries).unwrap();
    let q = multisplit_by::<K, K>(&gpu, &dq, None, &order).unwrap().keys;
    let in_order = gpu.download(&q).unwrap();
    let m = queries.len();
    let (mut out, mut found) = (gpu.alloc::<V>(m).unwrap(), gpu.alloc::<u8>(m).unwrap());
    t.find_device_ordered_async(&q, Some(&mut out), &mut found)
        .unwrap();
    let mut contained = gpu.alloc::<u8>(m).unwrap();
    t.find_device_ordered_async(&q, None, &mut contained)
        .unwrap();
    let (mut out_ref, mut found_ref) = (gpu.alloc::<V>(m).unwrap(), gpu.alloc::<u8>(m).unwrap());
    t.find_device_async(&q, &mut out_ref, &mut found_ref)
        .unwrap();
    t.synchronize().unwrap();
    let (out, found) = (gpu.download(&out).unwrap(), gpu.download(&found).unwrap());
    let contained = gpu.download(&contained).unwrap();
    let (out_ref, found_ref) = (
        gpu.download(&out_ref).unwrap(),
        gpu.download(&found_ref).unwrap(),
    );
    assert_eq!(found, found_ref, "{name}: found flags as the plain find");
    assert_eq!(contained, found_ref, "{name}: contains as the plain find");
    for (i, k) in in_order.iter().enumerate() {
        match stored.get(k) {
            Some(v) => {
                assert_eq!(found[i], 1, "{name}: {k:?} found");
                assert_eq!(&out[i], v, "{name}: value of {k:?}");
                assert_eq!(
                    out[i], out_ref[i],
                    "{name}: value of {k:?} as the plain find"
                );
            }
            None => assert_eq!(found[i], 0, "{name}: {k:?} absent"),
        }
    }
}

/// Lookups under `locality` (`On` and `Chunks` partition every lookup: the split with
/// positions, the ordered find, the answers gathered back) answer as the oracle: a batch of the
/// stored keys (the sentinels among them) and as many absent ones, shuffled, through
/// `find_device_async`, `contains_device_async` and the host `find`; and
/// `find_device_unordered_async` gives every batch index once, each with its key's answer.
fn partitioned_lookups_match<K: Key, V: Value>(g: u32, locality: LocalityMode) {
    let Some(gpu) = gpu() else { return };
    let name = format!("{}/{} g{g} {locality:?} lookups", K::NAME, V::NAME);
    let config = WarpDriveConfig::new(1 << 14)
        .group_size(g)
        .locality(locality);
    let mut t = warpdrive::<K, V>(&gpu, config);
    let mut rng = SplitMix64::new(mix(g as u64 * 31 + 9) ^ K::BYTES as u64);
    let n = t.capacity() * 9 / 10;
    let (keys, values, of) = batch_with_copies::<K, V>(&mut rng, n * 10 / 11, 4);
    insert_device(&name, &mut t, &keys, &values, InsertMode::Assign);
    let stored = check(&name, &t, &of, &HashMap::new(), InsertMode::Assign);
    let queries = stored_and_absent(&mut rng, &stored, n);
    let m = queries.len();
    let dq = gpu.upload(&queries).unwrap();
    let (mut out, mut found) = (gpu.alloc::<V>(m).unwrap(), gpu.alloc::<u8>(m).unwrap());
    let mut contained = gpu.alloc::<u8>(m).unwrap();
    t.find_device_async(&dq, &mut out, &mut found).unwrap();
    t.contains_device_async(&dq, &mut contained).unwrap();
    let unordered = t.find_device_unordered_async(&dq).unwrap();
    t.synchronize().unwrap();
    let (out, found) = (gpu.download(&out).unwrap(), gpu.download(&found).unwrap());
    let contained = gpu.download(&contained).unwrap();
    for (i, k) in queries.iter().enumerate() {
        match stored.get(k) {
            Some(v) => {
                assert_eq!((found[i], contained[i]), (1, 1), "{name}: {k:?} found");
                assert_eq!(&out[i], v, "{name}: value of {k:?}");
            }
            None => assert_eq!((found[i], contained[i]), (0, 0), "{name}: {k:?} absent"),
        }
    }
    let host = t.find(&queries).unwrap();
    for (k, got) in queries.iter().zip(&host) {
        assert_eq!(got.as_ref(), stored.get(k), "{name}: host find of {k:?}");
    }
    let index = gpu.download(&unordered.index).unwrap();
    let (u_values, u_found) = (
        gpu.download(&unordered.values).unwrap(),
        gpu.download(&unordered.found).unwrap(),
    );
    let mut seen = vec![false; m];
    for (j, &i) in index.iter().enumerate() {
        let i = i as usize;
        assert!(
            i < m && !seen[i],
            "{name}: unordered index {i} out of range or twice"
        );
        seen[i] = true;
        let k = &queries[i];
        match stored.get(k) {
            Some(v) => {
                assert_eq!(u_found[j], 1, "{name}: unordered {k:?} found");
                assert_eq!(&u_values[j], v, "{name}: unordered value of {k:?}");
            }
            None => assert_eq!(u_found[j], 0, "{name}: unordered {k:?} absent"),
        }
    }
}

/// Many copies of few keys in one partitioned batch, then a fill to load 0.9 with copies: the
/// copies of a key race for the same window's slots, so claims are lost to other keys and to
/// the key itself (the loser reads its window again, wd_insert_one); each key must end up
/// stored once, with one of its values, `len` exact.
fn copies_race_for_one_window<K: Key, V: Value>(g: u32) {
    let Some(gpu) = gpu() else { return };
    let name = format!("{}/{} g{g} copies", K::NAME, V::NAME);
    let config = WarpDriveConfig::new(1 << 13)
        .group_size(g)
        .locality(LocalityMode::On);
    let mut t = warpdrive::<K, V>(&gpu, config);
    let mut rng = SplitMix64::new(mix(g as u64 + 991) ^ K::BYTES as u64);
    let mut stored: HashMap<K, V> = HashMap::new();
    // Round 0: 64 keys, 256 copies each; round 1 tops the table up to load 0.9, 3 copies each.
    for (round, (distinct, copies)) in [(Some(64), 256), (None, 3)].into_iter().enumerate() {
        let distinct = distinct.unwrap_or(t.capacity() * 9 / 10 - stored.len());
        let fresh: Vec<K> = unique_keys::<K>(&mut rng, distinct + 64, round == 0)
            .into_iter()
            .filter(|k| !stored.contains_key(k))
            .take(distinct)
            .collect();
        let pairs: Vec<(K, V)> = (0..copies as u64)
            .flat_map(|c| {
                fresh
                    .iter()
                    .map(move |&k| (k, value_for(k, 10 * round as u64 + c)))
            })
            .collect();
        let (keys, values, of) = shuffled_batch::<K, V>(&mut rng, pairs);
        let what = format!("{name}, round {round} ({distinct} keys x {copies})");
        insert_device(&what, &mut t, &keys, &values, InsertMode::Assign);
        stored = check(&what, &t, &of, &stored, InsertMode::Assign);
        assert_eq!(t.len().unwrap(), stored.len(), "{what}: len");
    }
}

/// One key copied more often than its part's region of the slack split holds (the split's
/// default; a table of several stretches, so several parts): the copies that find the region
/// full are flagged and inserted from the batch after the regions, and the table must still end
/// exactly as in input order: each key once with one of its values (`Assign`), and each key's
/// count exact under `Apply(Sum)` of ones (each copy applied once, none lost or doubled).
fn one_key_overflows_its_region<K: Key, V: Value>() {
    let Some(gpu) = gpu() else { return };
    let name = format!("{}/{} hot key", K::NAME, V::NAME);
    // 2^23 slots: 64-128 MiB, more than one stretch of any L2 these tests meet.
    let config = WarpDriveConfig::new(1 << 23).locality(LocalityMode::On);
    let mut rng = SplitMix64::new(mix(K::BYTES as u64 + 4242));
    let distinct = unique_keys::<K>(&mut rng, 1 << 19, true);
    let hot = distinct[distinct.len() / 2];
    let mut pairs: Vec<(K, V)> = distinct.iter().map(|&k| (k, value_for(k, 1))).collect();
    pairs.extend((0..1u64 << 20).map(|c| (hot, value_for(hot, 100 + c))));
    let (keys, values, of) = shuffled_batch::<K, V>(&mut rng, pairs);

    let mut t = warpdrive::<K, V>(&gpu, config.clone());
    let what = format!("{name}, assign");
    insert_device(&what, &mut t, &keys, &values, InsertMode::Assign);
    let stored = check(&what, &t, &of, &HashMap::new(), InsertMode::Assign);
    assert_eq!(t.len().unwrap(), distinct.len(), "{what}: len");
    assert_eq!(stored.len(), distinct.len(), "{what}: contents");

    let mut t = warpdrive::<K, V>(&gpu, config);
    let what = format!("{name}, sum of ones");
    let ones = vec![V::from_bits(1); keys.len()];
    insert_device(&what, &mut t, &keys, &ones, InsertMode::Apply(Reduce::Sum));
    let mut counts: HashMap<K, u64> = HashMap::new();
    for &k in &keys {
        *counts.entry(k).or_default() += 1;
    }
    let want: HashMap<K, V> = counts.iter().map(|(&k, &c)| (k, V::from_bits(c))).collect();
    assert_eq!(
        want[&hot],
        V::from_bits((1 << 20) + 1),
        "{what}: the oracle"
    );
    assert_matches(&what, &t, &want);
}

#[test]
fn one_key_overflows_its_region_u64_u64() {
    one_key_overflows_its_region::<u64, u64>();
}

#[test]
fn one_key_overflows_its_region_u32_u32() {
    one_key_overflows_its_region::<u32, u32>();
}

#[test]
fn copies_race_for_one_window_u64_u64_g4() {
    copies_race_for_one_window::<u64, u64>(4);
}

#[test]
fn copies_race_for_one_window_u32_u32_g8() {
    copies_race_for_one_window::<u32, u32>(8);
}

#[test]
fn copies_race_for_one_window_u32_u64_g2() {
    copies_race_for_one_window::<u32, u64>(2);
}

macro_rules! cases {
    ($($name:ident: $k:ty, $v:ty;)*) => {$(
        mod $name {
            use super::*;
            #[test]
            fn on_g4() {
                partitioned_inserts_match::<$k, $v>(4, LocalityMode::On);
            }
            #[test]
            fn chunks_g1() {
                partitioned_inserts_match::<$k, $v>(1, LocalityMode::Chunks(1000));
            }
            #[test]
            fn chunks_g8() {
                partitioned_inserts_match::<$k, $v>(8, LocalityMode::Chunks(4096));
            }
            #[test]
            fn overflow() {
                overflow_is_reported::<$k, $v>();
            }
            #[test]
            fn lookups_on_g4() {
                partitioned_lookups_match::<$k, $v>(4, LocalityMode::On);
            }
            #[test]
            fn lookups_chunks_g2() {
                partitioned_lookups_match::<$k, $v>(2, LocalityMode::Chunks(1500));
            }
            #[test]
            fn ordered_calls_g1() {
                ordered_calls_match::<$k, $v>(1);
            }
            #[test]
            fn ordered_calls_g8() {
                ordered_calls_match::<$k, $v>(8);
            }
        }
    )*};
}

cases! {
    u32_u32: u32, u32;
    u64_u64: u64, u64;
    u32_u64: u32, u64;
    i64_i32: i64, i32;
    u128_u64: u128, u64;
    b32_u32: [u8; 32], u32;
    u64_b32: u64, [u8; 32];
}

/// Windows of 16 slots have no ordered kernel (one thread would hold 16 slots): `On` inserts in
/// input order, with the same contents.
#[test]
fn on_with_wide_windows_inserts_in_input_order() {
    partitioned_inserts_match::<u32, u32>(16, LocalityMode::On);
}

/// Windows of 16 slots: no order named, the ordered calls answer through the plain kernels.
#[test]
fn ordered_calls_with_wide_windows() {
    ordered_calls_match::<u32, u32>(16);
}

/// Windows of 16 slots have no ordered find: `On` looks up in input order, and the unordered
/// lookup answers in input order (`index[j] = j`); a small table under `Auto` too.
#[test]
fn lookups_without_order() {
    partitioned_lookups_match::<u32, u32>(16, LocalityMode::On);
    partitioned_lookups_match::<u64, u32>(4, LocalityMode::Auto);
}

/// `Auto` leaves a small table's batches in input order: same contents either way.
#[test]
fn auto_on_a_small_table_matches() {
    partitioned_inserts_match::<u32, u32>(4, LocalityMode::Auto);
}

/// A rehash moves the pairs through the partitioned insert (the new table has the same
/// `LocalityMode::On`): every pair is kept.
fn rehash_keeps_every_pair<K: Key, V: Value>() {
    let Some(gpu) = gpu() else { return };
    let name = format!("{}/{} rehash", K::NAME, V::NAME);
    let mut t = warpdrive::<K, V>(
        &gpu,
        WarpDriveConfig::new(1 << 13).locality(LocalityMode::On),
    );
    let mut rng = SplitMix64::new(mix(K::BYTES as u64 * 7 + 3));
    let keys = unique_keys::<K>(&mut rng, t.capacity() * 7 / 10, true);
    let values: Vec<V> = keys.iter().map(|&k| value_for(k, 5)).collect();
    t.insert(&keys, &values).unwrap();
    let oracle: HashMap<K, V> = keys.iter().copied().zip(values.iter().copied()).collect();
    t.rehash(1 << 15).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(t.capacity() >= 1 << 15, "{name}: capacity");
    assert_matches(&name, &t, &oracle);
    t.rehash(t.len().unwrap())
        .unwrap_or_else(|e| panic!("{name}, to load 1: {e}"));
    assert_matches(&format!("{name}, to load 1"), &t, &oracle);
}

/// A rehash into a table where some pairs find no room (one probe per key, load 0.9): the
/// partitioned insert counts failures, the pairs go again in input order, the rehash reports
/// `TableFull`, and the table is left as it was.
fn failed_rehash_leaves_the_table<K: Key, V: Value>() {
    let Some(gpu) = gpu() else { return };
    let name = format!("{}/{} failed rehash", K::NAME, V::NAME);
    let config = WarpDriveConfig::new(1 << 14)
        .group_size(1)
        .max_probes(1)
        .locality(LocalityMode::On);
    let mut t = warpdrive::<K, V>(&gpu, config);
    let mut rng = SplitMix64::new(mix(K::BYTES as u64 * 11 + 5));
    let keys = unique_keys::<K>(&mut rng, 1000, true);
    let values: Vec<V> = keys.iter().map(|&k| value_for(k, 6)).collect();
    let mut st = vec![warpmap::InsertStatus::default(); keys.len()];
    t.insert_with_status(&keys, &values, &mut st).unwrap();
    let oracle: HashMap<K, V> = keys
        .iter()
        .zip(&values)
        .zip(&st)
        .filter(|(_, s)| s.is_ok())
        .map(|((&k, &v), _)| (k, v))
        .collect();
    let cap = t.capacity();
    match t.rehash(oracle.len() * 10 / 9) {
        Err(Error::TableFull { .. }) => {}
        other => panic!("{name}: a rehash to load 0.9 with one probe per key gave {other:?}"),
    }
    assert_eq!(t.capacity(), cap, "{name}: capacity unchanged");
    assert_matches(&name, &t, &oracle);
}

#[test]
fn rehash_keeps_every_pair_u32_u32() {
    rehash_keeps_every_pair::<u32, u32>();
}
#[test]
fn rehash_keeps_every_pair_u64_u64() {
    rehash_keeps_every_pair::<u64, u64>();
}
#[test]
fn rehash_keeps_every_pair_b32_u32() {
    rehash_keeps_every_pair::<[u8; 32], u32>();
}
#[test]
fn failed_rehash_leaves_the_table_u32_u32() {
    failed_rehash_leaves_the_table::<u32, u32>();
}
#[test]
fn failed_rehash_leaves_the_table_u64_u64() {
    failed_rehash_leaves_the_table::<u64, u64>();
}

/// The L2's two sides (src/table/engine/l2_sides.rs), measured once per GPU: where two are
/// found (an H200: 66 + 66 SMs), every SM is on one of two non-empty sides, and the far latency
/// is above the near one. A GPU with one L2, or a run under compute-sanitizer (whose
/// instrumented atomics blur the two latencies), may find none: the ordered insert then runs as
/// without sides, and so does this test.
#[test]
fn l2_sides_are_measured() {
    use warpmap::table::engine::l2_sides;
    let Some(gpu) = gpu() else { return };
    if l2_sides::synthetic() {
        return; // made-up sides: nothing measured
    }
    let sides = l2_sides::sm_sides(&gpu).expect("measured");
    eprintln!(
        "L2 sides of {}: {:?}",
        gpu.name(),
        sides
            .as_ref()
            .map(|s| (s.counts, s.near_cycles, s.far_cycles))
    );
    let Some(s) = sides else {
        // A GPU with one L2, or timings blurred (compute-sanitizer's instrumented atomics).
        eprintln!("no two L2 sides found on sm_{}", gpu.sm());
        return;
    };
    assert!(s.counts[0] > 0 && s.counts[1] > 0, "{s:?}");
    assert_eq!(
        s.counts[0] + s.counts[1],
        gpu.sm_count(),
        "every SM on a side"
    );
    assert_eq!(
        s.side.iter().filter(|&&x| x <= 1).count() as u32,
        gpu.sm_count()
    );
    assert!(s.far_cycles > s.near_cycles && (s.threshold as f64) > s.near_cycles);
    // Measured once: the same answer again.
    assert_eq!(
        l2_sides::sm_sides(&gpu).expect("kept").as_deref(),
        Some(&*s)
    );
}

/// An array's granules: about half on each side, and the same sides when measured again (the
/// measurement itself, whether or not `WARPMAP_L2_SIDES` turns the sided insert on).
#[test]
fn l2_sides_of_an_array() {
    use warpmap::table::engine::l2_sides::TableL2Sides;
    let Some(gpu) = gpu() else { return };
    let buf = gpu.alloc_filled::<u32>(16 << 20, 0).expect("64 MiB");
    let (base, bytes) = (buf.device_address(), buf.num_bytes() as u64);
    let bits = |s: &TableL2Sides| {
        let mut v = vec![0u32; s.granules.len()];
        gpu.copy_to_host(&s.granules, &mut v).expect("copy");
        v
    };
    if warpmap::table::engine::l2_sides::synthetic() {
        return; // made-up sides: nothing measured
    }
    let Some(first) = TableL2Sides::measure(&gpu, base, bytes).expect("measured") else {
        // As in l2_sides_are_measured: one L2, or blurred timings.
        eprintln!("no two L2 sides found on sm_{}", gpu.sm());
        return;
    };
    let second = TableL2Sides::measure(&gpu, base, bytes)
        .expect("measured")
        .expect("sides");
    let (a, b) = (bits(&first), bits(&second));
    let granules = (((base + bytes - 1) >> 12) - (base >> 12) + 1) as usize;
    assert_eq!(a.len(), granules.div_ceil(32));
    let ones = a.iter().map(|w| w.count_ones() as usize).sum::<usize>();
    let share = ones as f64 / granules as f64;
    let same = a
        .iter()
        .zip(&b)
        .map(|(x, y)| (!(x ^ y)).count_ones() as usize)
        .sum::<usize>();
    let agree = same as f64 / (a.len() * 32) as f64;
    eprintln!("granules on side 1: {share:.3}; agreement of two measurements: {agree:.4}");
    assert!((0.3..=0.7).contains(&share), "side 1 share {share}");
    assert!(agree >= 0.9, "agreement {agree}");
    drop(buf);
}
