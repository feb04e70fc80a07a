//! The `HashTable` contract (see `src/table/mod.rs`), one test body run on every backend present
//! (`common::backends`: the CPU table always, WarpDrive with every group size on a GPU), checked
//! against a `std::collections::HashMap` oracle replaying the same operations.
//!
//! Every contract test is instantiated for several key/value types (the `contract!` modules:
//! `u32_u32::random_ops`, `i64_u64::full_table`, `b16_u64::last_byte_distinct`, ...), narrow
//! (4 and 8 bytes) and wide (`u128`, `i128`, byte arrays up to 64-byte keys and 256-byte values).
//! Wide types run on the backends that support their widths (the CPU table today; see
//! `common::backends`). The `gpu` module holds GPU-only cases: the
//! device-buffer (`DeviceHashTable`) variants, asynchronous failure reporting, probe limits and
//! invalid GPU configurations. Without a GPU those are skipped (see `tests/common/mod.rs`;
//! `WARPMAP_REQUIRE_GPU=1` makes a missing GPU fail).

mod common;

use common::*;
use std::collections::{HashMap, HashSet};
use warpmap::status::{FAILURE_MASK, PROBE_LIMIT, TABLE_FULL, UPDATED};
use warpmap::{CpuTable, Error, HashTable, InsertStatus, Key, Value};

/// A seed per test and type pair, so that each instantiation sees different keys.
fn seed_for<K: Key, V: Value>(test: u64) -> u64 {
    let name = format!("{}/{}", K::NAME, V::NAME);
    name.bytes().fold(mix(test), |h, b| mix(h ^ b as u64))
}

fn statuses(n: usize) -> Vec<InsertStatus> {
    vec![InsertStatus(0xdead_beef); n]
}

/// Random batches of insert / find / contains / erase / len / clear / retrieve_all, compared
/// with the oracle after every operation. Keys come from a pool of capacity/2 keys (sentinel
/// keys included), so no insert can fail; queries and erases also use keys outside the pool.
fn random_ops<K: Key, V: Value>() {
    const CAP: usize = 1 << 12;
    for (name, mut t) in backends::<K, V>(CAP) {
        let mut rng = SplitMix64::new(seed_for::<K, V>(1));
        let pool = unique_keys::<K>(&mut rng, CAP / 2, true);
        let mut oracle: HashMap<K, V> = HashMap::new();
        let marker = V::from_bits(0x5a5a_5a5a_5a5a_5a5a);
        for round in 0..80u64 {
            let what = format!("{name}, round {round}");
            let n = rng.index(1500);
            let mixed: Vec<K> = (0..n)
                .map(|_| {
                    if rng.chance(0.8) {
                        pool[rng.index(pool.len())]
                    } else {
                        rng.key()
                    }
                })
                .collect();
            match rng.below(100) {
                0..=34 => {
                    let keys: Vec<K> = (0..n).map(|_| pool[rng.index(pool.len())]).collect();
                    let values: Vec<V> = keys.iter().map(|&k| value_for(k, round)).collect();
                    if rng.chance(0.5) {
                        let mut st = statuses(n);
                        let failed = t.insert_with_status(&keys, &values, &mut st).unwrap();
                        assert_eq!(failed, 0, "{what}: insert_with_status failures");
                        assert_insert_statuses(&what, t.as_ref(), &keys, &st, &oracle);
                    } else {
                        t.insert(&keys, &values)
                            .unwrap_or_else(|e| panic!("{what}: insert: {e}"));
                    }
                    for (k, v) in keys.iter().zip(&values) {
                        oracle.insert(*k, *v);
                    }
                }
                35..=54 => {
                    let mut values = vec![marker; n];
                    let mut found = vec![true; n];
                    let hits = t.find_into(&mixed, &mut values, &mut found).unwrap();
                    let mut expect_hits = 0;
                    for i in 0..n {
                        let k = mixed[i];
                        match oracle.get(&k) {
                            Some(v) => {
                                expect_hits += 1;
                                assert!(found[i], "{what}: find_into missed {k:?}");
                                assert_eq!(values[i], *v, "{what}: find_into value of {k:?}");
                            }
                            None => {
                                assert!(!found[i], "{what}: find_into found absent {k:?}");
                                assert_eq!(values[i], marker, "{what}: find_into wrote a miss");
                            }
                        }
                    }
                    assert_eq!(hits, expect_hits, "{what}: find_into hit count");
                    let got = t.find(&mixed).unwrap();
                    let expect: Vec<Option<V>> =
                        mixed.iter().map(|k| oracle.get(k).copied()).collect();
                    assert_eq!(got, expect, "{what}: find");
                }
                55..=69 => {
                    let got = t.contains(&mixed).unwrap();
                    let expect: Vec<bool> = mixed.iter().map(|k| oracle.contains_key(k)).collect();
                    assert_eq!(got, expect, "{what}: contains");
                }
                70..=95 => {
                    let present: HashSet<K> = mixed
                        .iter()
                        .filter(|k| oracle.contains_key(k))
                        .copied()
                        .collect();
                    let erased = t.erase(&mixed).unwrap();
                    assert_eq!(erased, present.len(), "{what}: erase count");
                    for k in &present {
                        oracle.remove(k);
                    }
                }
                96..=97 => {
                    t.clear().unwrap();
                    oracle.clear();
                    assert!(t.capacity() >= CAP, "{what}: capacity after clear");
                }
                _ => assert_matches(&what, t.as_ref(), &oracle),
            }
            assert_eq!(t.len().unwrap(), oracle.len(), "{what}: len");
            assert_eq!(t.is_empty().unwrap(), oracle.is_empty(), "{what}: is_empty");
            let lf = t.load_factor().unwrap();
            assert!(
                (lf - oracle.len() as f64 / t.capacity() as f64).abs() < 1e-12,
                "{what}: load"
            );
            if round % 16 == 15 {
                assert_matches(&what, t.as_ref(), &oracle);
            }
        }
        assert_matches(&name, t.as_ref(), &oracle);
    }
}

/// A batch that holds keys many times with different values: each key ends up with one of its
/// values from the batch (on the CPU: the last), and the status says new exactly once for a key
/// that was absent, UPDATED everywhere for a key that was present.
fn duplicates_in_one_batch<K: Key, V: Value>() {
    const CAP: usize = 1 << 10;
    for (name, mut t) in backends::<K, V>(CAP) {
        let mut rng = SplitMix64::new(seed_for::<K, V>(2));
        let pool = unique_keys::<K>(&mut rng, 64, true);
        let mut oracle = HashMap::new();
        let pre: Vec<K> = pool.iter().copied().step_by(2).collect();
        let pre_values: Vec<V> = pre.iter().map(|&k| value_for(k, 0)).collect();
        t.insert(&pre, &pre_values).unwrap();
        oracle.extend(pre.iter().copied().zip(pre_values));

        for (round, n) in [(1u64, 3000usize), (2, 100), (3, 2)] {
            let what = format!("{name}, batch {round}");
            let keys: Vec<K> = (0..n).map(|_| pool[rng.index(pool.len())]).collect();
            let values: Vec<V> = (0..n)
                .map(|i| V::from_bits(round << 20 | (i as u64 + 1)))
                .collect();
            let mut st = statuses(n);
            assert_eq!(
                t.insert_with_status(&keys, &values, &mut st).unwrap(),
                0,
                "{what}"
            );
            assert_insert_statuses(&what, t.as_ref(), &keys, &st, &oracle);
            let mut candidates: HashMap<K, Vec<V>> = HashMap::new();
            for (k, v) in keys.iter().zip(&values) {
                candidates.entry(*k).or_default().push(*v);
            }
            let distinct: Vec<K> = candidates.keys().copied().collect();
            let got = t.find(&distinct).unwrap();
            for (k, v) in distinct.iter().zip(got) {
                let v = v.unwrap_or_else(|| panic!("{what}: key {k:?} of the batch not found"));
                let c = &candidates[k];
                assert!(
                    c.contains(&v),
                    "{what}: {k:?} holds {v:?}, not one of its batch values"
                );
                if t.backend() == warpmap::Backend::Cpu {
                    assert_eq!(
                        v,
                        *c.last().unwrap(),
                        "{what}: CPU keeps the last occurrence"
                    );
                }
                oracle.insert(*k, v);
            }
            assert_matches(&what, t.as_ref(), &oracle);
        }

        // One key, many times: a sentinel key (present) and a fresh key (absent).
        for (i, k) in [
            sentinel_keys::<K>()[0],
            unique_keys::<K>(&mut rng, 1, false)[0],
        ]
        .into_iter()
        .enumerate()
        {
            let what = format!("{name}, one key {k:?} 500 times");
            let keys = vec![k; 500];
            let values: Vec<V> = (0..500).map(|j| V::from_bits(0x7700 + j)).collect();
            let mut st = statuses(500);
            assert_eq!(
                t.insert_with_status(&keys, &values, &mut st).unwrap(),
                0,
                "{what}"
            );
            assert_insert_statuses(&what, t.as_ref(), &keys, &st, &oracle);
            let new = st.iter().filter(|s| !s.was_update()).count();
            assert_eq!(new, i, "{what}: new statuses");
            let v = t.find(&[k]).unwrap()[0].unwrap();
            assert!(values.contains(&v), "{what}: stored {v:?}");
            oracle.insert(k, v);
            assert_matches(&what, t.as_ref(), &oracle);
        }
    }
}

/// Keys equal to the internal sentinels (and other special values) go through every operation.
fn sentinel_keys_everywhere<K: Key, V: Value>(specials: &[K]) {
    for s in sentinel_keys::<K>() {
        assert!(
            specials.contains(&s),
            "the special keys must include the sentinel {s:?}"
        );
    }
    let [s0, s1] = sentinel_keys::<K>();
    let n = specials.len();
    for (name, mut t) in backends::<K, V>(64) {
        let what = |step: &str| format!("{name}: {step}");
        assert_eq!(
            t.find(specials).unwrap(),
            vec![None; n],
            "{}",
            what("find on empty")
        );
        assert_eq!(
            t.contains(specials).unwrap(),
            vec![false; n],
            "{}",
            what("contains on empty")
        );
        assert_eq!(t.erase(specials).unwrap(), 0, "{}", what("erase on empty"));
        assert_eq!(contents(&name, t.as_ref()).len(), 0);

        let mut oracle = HashMap::new();
        for round in 0..2u64 {
            let values: Vec<V> = specials.iter().map(|&k| value_for(k, round)).collect();
            let mut st = statuses(n);
            assert_eq!(t.insert_with_status(specials, &values, &mut st).unwrap(), 0);
            assert_insert_statuses(&what("insert"), t.as_ref(), specials, &st, &oracle);
            oracle.extend(specials.iter().copied().zip(values));
            assert_matches(
                &what(&format!("after insert round {round}")),
                t.as_ref(),
                &oracle,
            );
        }

        assert_eq!(t.erase(&[s0]).unwrap(), 1, "{}", what("erase all-ones"));
        assert_eq!(
            t.erase(&[s0]).unwrap(),
            0,
            "{}",
            what("erase all-ones again")
        );
        oracle.remove(&s0);
        assert_eq!(
            t.find(&[s0, s1]).unwrap(),
            vec![None, Some(oracle[&s1])],
            "{}",
            what("find")
        );
        assert_matches(&what("after erasing all-ones"), t.as_ref(), &oracle);
        assert_eq!(
            t.erase(&[s1, s1]).unwrap(),
            1,
            "{}",
            what("erase all-ones-minus-one twice")
        );
        oracle.remove(&s1);
        assert_matches(&what("after erasing both sentinels"), t.as_ref(), &oracle);

        let mut st = statuses(2);
        let values = [value_for::<K, V>(s0, 7), value_for::<K, V>(s1, 7)];
        assert_eq!(
            t.insert_with_status(&[s1, s0], &[values[1], values[0]], &mut st)
                .unwrap(),
            0
        );
        assert!(
            st.iter().all(|s| s.is_ok() && !s.was_update()),
            "{}: {st:?}",
            what("re-insert")
        );
        oracle.insert(s0, values[0]);
        oracle.insert(s1, values[1]);
        assert_matches(
            &what("after re-inserting the sentinels"),
            t.as_ref(),
            &oracle,
        );

        assert_eq!(t.erase(specials).unwrap(), n, "{}", what("erase all"));
        oracle.clear();
        assert_matches(&what("after erasing all"), t.as_ref(), &oracle);

        let values: Vec<V> = specials.iter().map(|&k| value_for(k, 9)).collect();
        t.insert(specials, &values).unwrap();
        t.clear().unwrap();
        assert_matches(&what("after clear"), t.as_ref(), &oracle);
        assert_eq!(
            t.contains(specials).unwrap(),
            vec![false; n],
            "{}",
            what("contains after clear")
        );
        let mut st = statuses(n);
        assert_eq!(t.insert_with_status(specials, &values, &mut st).unwrap(), 0);
        assert!(
            st.iter().all(|s| s.is_ok() && !s.was_update()),
            "{}: {st:?}",
            what("insert after clear")
        );
        oracle.extend(specials.iter().copied().zip(values));
        assert_matches(&what("after insert after clear"), t.as_ref(), &oracle);
    }
}

/// Erase then re-insert, round after round at load up to 0.75 (tombstones everywhere): a key
/// present behind a tombstone must be updated, not stored twice.
fn erase_then_reinsert<K: Key, V: Value>() {
    const CAP: usize = 1 << 12;
    for (name, mut t) in backends::<K, V>(CAP) {
        let mut rng = SplitMix64::new(seed_for::<K, V>(3));
        let universe = unique_keys::<K>(&mut rng, CAP * 3 / 4, true);
        let mut oracle = HashMap::new();
        let first: Vec<K> = universe.iter().copied().step_by(2).collect();
        let values: Vec<V> = first.iter().map(|&k| value_for(k, 0)).collect();
        t.insert(&first, &values).unwrap();
        oracle.extend(first.iter().copied().zip(values));
        for round in 1..=12u64 {
            let what = format!("{name}, round {round}");
            let erase: Vec<K> = universe
                .iter()
                .filter(|k| rng.chance(if oracle.contains_key(k) { 0.4 } else { 0.1 }))
                .copied()
                .collect();
            let present = erase.iter().filter(|k| oracle.contains_key(k)).count();
            assert_eq!(t.erase(&erase).unwrap(), present, "{what}: erase count");
            for k in &erase {
                oracle.remove(k);
            }
            assert_matches(&format!("{what} after erase"), t.as_ref(), &oracle);

            // Re-insert what was erased (now in tombstones' places) plus a random half of all.
            let mut keys: Vec<K> = erase.clone();
            keys.extend(universe.iter().filter(|_| rng.chance(0.5)));
            let values: Vec<V> = keys.iter().map(|&k| value_for(k, round)).collect();
            let mut st = statuses(keys.len());
            assert_eq!(
                t.insert_with_status(&keys, &values, &mut st).unwrap(),
                0,
                "{what}"
            );
            assert_insert_statuses(&what, t.as_ref(), &keys, &st, &oracle);
            oracle.extend(keys.iter().copied().zip(values));
            assert_matches(&format!("{what} after re-insert"), t.as_ref(), &oracle);
        }
    }
}

/// Fill to 0.95 of `capacity()` with unique random keys: every key must be placed, on every
/// backend; then update all, and erase and re-insert half.
/// Grow a nearly full table: every pair survives, tombstones are gone, the new room is usable,
/// and a rehash below `len()` is refused without touching the table.
fn rehash<K: Key, V: Value>() {
    const CAP: usize = 1 << 12;
    for (name, mut t) in backends::<K, V>(CAP) {
        let mut rng = SplitMix64::new(seed_for::<K, V>(9));
        let cap = t.capacity();
        // Capacity 0 is invalid input for every table, empty or not.
        // (The capacity before the call: tables that split their buckets, like two_level, may
        // have grown while being filled.)
        let refused = |t: &mut DynTable<K, V>, what: &str| {
            let before = t.capacity();
            let err = t.rehash(0).unwrap_err();
            assert!(
                matches!(err, Error::InvalidInput(_)),
                "{name}: rehash(0) of {what}: {err}"
            );
            assert_eq!(
                t.capacity(),
                before,
                "{name}: rehash(0) of {what} changed it"
            );
        };
        refused(&mut t, "an empty table");
        assert!(t.is_empty().unwrap(), "{name}");
        let keys = unique_keys::<K>(&mut rng, cap * 9 / 10 + cap, false);
        let (first, more) = keys.split_at(cap * 9 / 10);
        let values: Vec<V> = first.iter().map(|&k| value_for(k, 0)).collect();
        t.insert(first, &values).unwrap();
        let erased: Vec<K> = first.iter().copied().step_by(3).collect();
        assert_eq!(t.erase(&erased).unwrap(), erased.len(), "{name}: erase");
        let mut oracle: HashMap<K, V> = first.iter().copied().zip(values).collect();
        for k in &erased {
            oracle.remove(k);
        }

        refused(&mut t, "a filled table");
        let err = t.rehash(oracle.len() - 1).unwrap_err();
        assert!(
            matches!(err, warpmap::Error::InvalidInput(_)),
            "{name}: {err}"
        );
        assert_matches(
            &format!("{name} after a refused rehash"),
            t.as_ref(),
            &oracle,
        );

        t.rehash(2 * cap).unwrap();
        assert!(
            t.capacity() >= 2 * cap,
            "{name}: capacity {} after rehash",
            t.capacity()
        );
        assert_matches(&format!("{name} after rehash"), t.as_ref(), &oracle);

        let values: Vec<V> = more.iter().map(|&k| value_for(k, 1)).collect();
        t.insert(more, &values)
            .unwrap_or_else(|e| panic!("{name}: insert into the grown table: {e}"));
        oracle.extend(more.iter().copied().zip(values));
        assert_matches(&format!("{name} filled after rehash"), t.as_ref(), &oracle);
    }
}

/// `insert_if_absent` keeps present values (sentinel keys too), adds absent keys, and keeps
/// exactly one value of a key repeated in the batch.
fn insert_if_absent<K: Key, V: Value>() {
    use warpmap::status::{PRESENT, UPDATED};
    use warpmap::InsertMode;
    const CAP: usize = 1 << 12;
    for (name, mut t) in backends::<K, V>(CAP) {
        let mut rng = SplitMix64::new(seed_for::<K, V>(10));
        let keys = unique_keys::<K>(&mut rng, CAP / 2, false);
        let (old, new) = keys.split_at(CAP / 4);
        let mut first: Vec<K> = old.to_vec();
        first.extend(sentinel_keys::<K>());
        let v0: Vec<V> = first.iter().map(|&k| value_for(k, 0)).collect();
        t.insert(&first, &v0).unwrap();

        // Present keys (old ones and the sentinels) and absent ones, one absent key three times.
        let mut batch: Vec<K> = first.clone();
        batch.extend(new);
        let repeated = new[0];
        batch.push(repeated);
        batch.push(repeated);
        let v1: Vec<V> = batch
            .iter()
            .enumerate()
            .map(|(i, &k)| value_for(k, 1 + i as u64))
            .collect();
        let mut st = statuses(batch.len());
        let failed = t
            .insert_with_mode(&batch, &v1, &mut st, InsertMode::IfAbsent)
            .unwrap();
        assert_eq!(failed, 0, "{name}");
        for (i, s) in st.iter().enumerate().take(first.len()) {
            assert!(
                s.0 & PRESENT != 0 && s.0 & UPDATED == 0,
                "{name}: key {i}: {s:?}"
            );
        }
        for (i, s) in st.iter().enumerate().skip(first.len()) {
            assert!(s.is_ok(), "{name}: key {i}: {s:?}");
            if batch[i] != repeated {
                assert_eq!(s.0 & PRESENT, 0, "{name}: key {i} was absent: {s:?}");
            }
        }
        let occurrences: Vec<usize> = (0..batch.len()).filter(|&i| batch[i] == repeated).collect();
        let news = occurrences
            .iter()
            .filter(|&&i| st[i].0 & PRESENT == 0)
            .count();
        assert_eq!(news, 1, "{name}: one occurrence of the repeated key is new");

        let mut oracle: HashMap<K, V> = first.iter().copied().zip(v0).collect();
        for (i, &k) in batch.iter().enumerate().skip(first.len()) {
            oracle.entry(k).or_insert(v1[i]);
        }
        let stored = t.find(&[repeated]).unwrap()[0].expect("the repeated key is stored");
        assert!(
            occurrences.iter().any(|&i| v1[i] == stored),
            "{name}: the repeated key holds one of its batch values"
        );
        oracle.insert(repeated, stored);
        assert_matches(
            &format!("{name} after insert_if_absent"),
            t.as_ref(),
            &oracle,
        );
        assert_eq!(t.len().unwrap(), oracle.len(), "{name}: len");
    }
}

/// A mixed batch of inserts and finds: keys from earlier batches are found with their values,
/// keys inserted in the same batch are found or not but never with a wrong value, absent keys
/// are not found, and afterwards the table holds every insert.
fn mixed_batch<K: Key, V: Value>() {
    use warpmap::MixedOp;
    const CAP: usize = 1 << 13;
    for (name, mut t) in backends::<K, V>(CAP) {
        let mut rng = SplitMix64::new(seed_for::<K, V>(11));
        let keys = unique_keys::<K>(&mut rng, CAP / 4 + CAP / 4 + CAP / 8, false);
        let (old, rest) = keys.split_at(CAP / 4);
        let (new, absent) = rest.split_at(CAP / 4);
        let v0: Vec<V> = old.iter().map(|&k| value_for(k, 0)).collect();
        t.insert(old, &v0).unwrap();
        let updated: Vec<K> = old[..CAP / 16].to_vec();
        let mut batch: Vec<(MixedOp, K, V)> = Vec::new();
        for &k in new.iter().chain(sentinel_keys::<K>().iter()) {
            batch.push((MixedOp::Insert, k, value_for(k, 1)));
            batch.push((MixedOp::Find, k, V::zeroed()));
        }
        for &k in &updated {
            batch.push((MixedOp::Insert, k, value_for(k, 2)));
        }
        for &k in old.iter().chain(absent) {
            batch.push((MixedOp::Find, k, V::zeroed()));
        }
        // Shuffle (Fisher-Yates) so inserts and finds interleave across the launch.
        for i in (1..batch.len()).rev() {
            let j = (rng.next_u64() % (i as u64 + 1)) as usize;
            batch.swap(i, j);
        }
        let ops: Vec<MixedOp> = batch.iter().map(|b| b.0).collect();
        let bkeys: Vec<K> = batch.iter().map(|b| b.1).collect();
        let bvals: Vec<V> = batch.iter().map(|b| b.2).collect();
        let poison = V::from_bits(0x5a5a_5a5a_5a5a_5a5a);
        let mut st = statuses(batch.len());
        let mut out = vec![poison; batch.len()];
        let mut found = vec![false; batch.len()];
        let failed = match t.mixed_batch(&ops, &bkeys, &bvals, &mut st, &mut out, &mut found) {
            Err(warpmap::Error::Unsupported(why)) if t.backend() == warpmap::Backend::Gpu => {
                eprintln!("{name}: mixed batches unsupported here: {why}");
                continue;
            }
            other => other.unwrap(),
        };
        assert_eq!(failed, 0, "{name}");
        let old_set: HashSet<K> = old.iter().copied().collect();
        let updated_set: HashSet<K> = updated.iter().copied().collect();
        let absent_set: HashSet<K> = absent.iter().copied().collect();
        for i in 0..batch.len() {
            let k = bkeys[i];
            match ops[i] {
                MixedOp::Insert => {
                    assert!(st[i].is_ok(), "{name}: insert {i}: {:?}", st[i]);
                    if updated_set.contains(&k) {
                        assert!(st[i].0 & UPDATED != 0, "{name}: update {i}: {:?}", st[i]);
                    }
                }
                MixedOp::Find if absent_set.contains(&k) => {
                    assert!(!found[i], "{name}: absent key {i} found");
                    assert_eq!(out[i], poison, "{name}: out {i} written for a miss");
                }
                MixedOp::Find if updated_set.contains(&k) => {
                    assert!(found[i], "{name}: old key {i} not found");
                    assert!(
                        out[i] == value_for(k, 0) || out[i] == value_for(k, 2),
                        "{name}: updated key {i}: {:?}",
                        out[i]
                    );
                }
                MixedOp::Find if old_set.contains(&k) => {
                    assert!(found[i], "{name}: old key {i} not found");
                    assert_eq!(out[i], value_for::<K, V>(k, 0), "{name}: old key {i}");
                }
                MixedOp::Find => {
                    if found[i] {
                        assert_eq!(out[i], value_for::<K, V>(k, 1), "{name}: new key {i}");
                    } else {
                        assert_eq!(out[i], poison, "{name}: out {i} written for a miss");
                    }
                }
                op => unreachable!("{name}: no {op:?} in this batch"),
            }
        }
        let mut oracle: HashMap<K, V> = old.iter().copied().zip(v0).collect();
        for &k in &updated {
            oracle.insert(k, value_for(k, 2));
        }
        for &k in new.iter().chain(sentinel_keys::<K>().iter()) {
            oracle.insert(k, value_for(k, 1));
        }
        assert_matches(&format!("{name} after a mixed batch"), t.as_ref(), &oracle);

        let bad = t.mixed_batch(&ops[1..], &bkeys, &bvals, &mut st, &mut out, &mut found);
        assert!(
            matches!(bad, Err(warpmap::Error::InvalidInput(_))),
            "{name}: {bad:?}"
        );
    }
}

/// `reserve`: a no-op (same capacity) while the room is there, an `InvalidInput` on overflow;
/// otherwise it grows so that `len + additional` keys fit at the table's `max_load_factor`, and
/// then inserting that many new keys never fails. Exact on the CPU: capacity `len + additional`.
fn reserve<K: Key, V: Value>() {
    const CAP: usize = 1 << 12;
    for (name, mut t) in backends::<K, V>(CAP) {
        let mut rng = SplitMix64::new(seed_for::<K, V>(14));
        let cap = t.capacity();
        let max_load = t.max_load_factor();
        assert!(
            max_load > 0.0 && max_load <= 1.0,
            "{name}: max_load_factor {max_load}"
        );
        let fits = |capacity: usize| {
            if max_load >= 1.0 {
                capacity
            } else {
                (capacity as f64 * max_load) as usize
            }
        };
        let additional = 2 * cap;
        let keys = unique_keys::<K>(&mut rng, cap / 4 + additional, true);
        let (first, more) = keys.split_at(cap / 4);
        let values: Vec<V> = first.iter().map(|&k| value_for(k, 0)).collect();
        t.insert(first, &values).unwrap();
        let mut oracle: HashMap<K, V> = first.iter().copied().zip(values).collect();

        // Room enough: nothing changes.
        let room = fits(cap) - oracle.len();
        for n in [0, 1, room] {
            t.reserve(n)
                .unwrap_or_else(|e| panic!("{name}: reserve({n}) with room {room}: {e}"));
            assert_eq!(t.capacity(), cap, "{name}: reserve({n}) with room {room}");
        }
        let err = t.reserve(usize::MAX).unwrap_err();
        assert!(matches!(err, Error::InvalidInput(_)), "{name}: {err}");
        assert_eq!(t.capacity(), cap, "{name}: a refused reserve");
        assert_matches(&format!("{name} after reserves"), t.as_ref(), &oracle);

        // Growth.
        t.reserve(additional)
            .unwrap_or_else(|e| panic!("{name}: reserve({additional}): {e}"));
        let grown = t.capacity();
        assert!(
            fits(grown) >= oracle.len() + additional,
            "{name}: capacity {grown} at load {max_load} cannot hold {} + {additional}",
            oracle.len()
        );
        if t.scheme() == "cpu" {
            assert_eq!(grown, oracle.len() + additional, "{name}: exact on the CPU");
        }
        assert_matches(&format!("{name} after growing"), t.as_ref(), &oracle);
        t.reserve(additional).unwrap();
        assert_eq!(t.capacity(), grown, "{name}: a second reserve moved it");

        let values: Vec<V> = more.iter().map(|&k| value_for(k, 1)).collect();
        let mut st = statuses(more.len());
        let failed = t.insert_with_status(more, &values, &mut st).unwrap();
        assert_eq!(failed, 0, "{name}: inserts after reserve failed");
        oracle.extend(more.iter().copied().zip(values));
        assert_matches(&format!("{name} filled after reserve"), t.as_ref(), &oracle);
    }
}

/// Mixed batches that erase. On the tables that support it (the CPU backend; every scheme but
/// WarpDrive, Stadium and DyCuckoo, see `common::erases_in_mixed_batches`), checked against the
/// oracle: a key present before and erased once or twice is gone and reported erased exactly
/// once; an absent key's erase reports nothing; finds and inserts of keys nobody erases behave
/// as always; for a key that is both erased and found or inserted in the batch, every output
/// agrees with one order of those operations and the table ends in the state that order
/// leaves. Erase operations write only `found`; inserts leave it alone. WarpDrive, Stadium and
/// DyCuckoo refuse such a batch with `Unsupported` and change nothing.
fn mixed_erase<K: Key, V: Value>() {
    use warpmap::MixedOp::{self, Erase, Find, Insert};
    const CAP: usize = 1 << 12;
    for (name, mut t) in backends::<K, V>(CAP) {
        let mut rng = SplitMix64::new(seed_for::<K, V>(15));
        // Sentinel keys, 0 and 1 first: they are among the keys erased once.
        let pool = unique_keys::<K>(&mut rng, 1400, true);
        let (old, new) = pool.split_at(800);
        let v0: Vec<V> = old.iter().map(|&k| value_for(k, 0)).collect();
        t.insert(old, &v0).unwrap();
        let before: HashMap<K, V> = old.iter().copied().zip(v0).collect();

        let (erased_once, erased_twice) = (&old[..150], &old[150..200]);
        let (kept, race_find, race_update) = (&old[200..500], &old[600..700], &old[700..800]);
        let (inserted, race_insert) = (&new[..300], &new[300..400]);
        let (absent_erase, absent_find) = (&new[400..500], &new[500..600]);
        let mut batch: Vec<(MixedOp, K, V)> = Vec::new();
        let mut push = |keys: &[K], ops: &[MixedOp]| {
            for &k in keys {
                for &op in ops {
                    batch.push((op, k, value_for(k, 1)));
                }
            }
        };
        push(erased_once, &[Erase]);
        push(erased_twice, &[Erase, Erase]);
        push(kept, &[Find]);
        push(race_find, &[Find, Erase]);
        push(race_update, &[Insert, Erase]);
        push(inserted, &[Insert]);
        push(race_insert, &[Insert, Erase]);
        push(absent_erase, &[Erase]);
        push(absent_find, &[Find]);
        for i in (1..batch.len()).rev() {
            let j = rng.index(i + 1);
            batch.swap(i, j);
        }
        let ops: Vec<MixedOp> = batch.iter().map(|b| b.0).collect();
        let bkeys: Vec<K> = batch.iter().map(|b| b.1).collect();
        let bvals: Vec<V> = batch.iter().map(|b| b.2).collect();
        let n = batch.len();
        let poison = V::from_bits(0x5a5a_5a5a_5a5a_5a5a);
        let mut st = statuses(n);
        let mut out = vec![poison; n];
        let mut found = vec![true; n];

        let bad = t.mixed_batch(&ops[1..], &bkeys, &bvals, &mut st, &mut out, &mut found);
        assert!(
            matches!(bad, Err(Error::InvalidInput(_))),
            "{name}: {bad:?}"
        );

        let result = t.mixed_batch(&ops, &bkeys, &bvals, &mut st, &mut out, &mut found);
        if !erases_in_mixed_batches(behaves_as(&name)) {
            match result {
                Err(Error::Unsupported(why)) => assert!(why.contains(t.scheme()), "{name}: {why}"),
                other => panic!("{name}: a mixed batch with erases gave {other:?}"),
            }
            assert!(
                st.iter().all(|s| s.0 == 0xdead_beef),
                "{name}: status written"
            );
            assert!(out.iter().all(|v| *v == poison), "{name}: out written");
            assert!(found.iter().all(|&f| f), "{name}: found written");
            assert_matches(
                &format!("{name} after a refused batch"),
                t.as_ref(),
                &before,
            );
            continue;
        }
        let failed = result.unwrap_or_else(|e| panic!("{name}: mixed batch with erases: {e}"));
        assert_eq!(failed, 0, "{name}: failed inserts");

        // Per key: the outputs of its operations, in batch order.
        let mut by_key: HashMap<K, Vec<usize>> = HashMap::new();
        for (i, k) in bkeys.iter().enumerate() {
            by_key.entry(*k).or_default().push(i);
        }
        for i in 0..n {
            let what = format!("{name}: op {i} ({:?} {:?})", ops[i], bkeys[i]);
            match ops[i] {
                Insert => {
                    assert!(st[i].is_ok(), "{what}: {:?}", st[i]);
                    assert!(found[i], "{what}: found written by an insert");
                    assert_eq!(out[i], poison, "{what}: out written by an insert");
                }
                Erase => {
                    assert_eq!(st[i].0, 0xdead_beef, "{what}: status written by an erase");
                    assert_eq!(out[i], poison, "{what}: out written by an erase");
                }
                Find => {
                    assert_eq!(st[i].0, 0xdead_beef, "{what}: status written by a find");
                    if found[i] {
                        assert_eq!(out[i], value_for::<K, V>(bkeys[i], 0), "{what}: value");
                    } else {
                        assert_eq!(out[i], poison, "{what}: out written for a miss");
                    }
                }
            }
        }
        let op_of = |k: &K, op: MixedOp| -> usize {
            by_key[k].iter().copied().find(|&i| ops[i] == op).unwrap()
        };
        let mut oracle = before.clone();
        for k in erased_once.iter().chain(race_find) {
            assert!(found[op_of(k, Erase)], "{name}: erase of present {k:?}");
            oracle.remove(k);
        }
        for k in erased_twice {
            let reported = by_key[k].iter().filter(|&&i| found[i]).count();
            assert_eq!(
                reported, 1,
                "{name}: {k:?} erased twice, reported {reported} times"
            );
            oracle.remove(k);
        }
        for k in kept {
            assert!(found[op_of(k, Find)], "{name}: find of kept {k:?}");
        }
        for k in absent_erase.iter().chain(absent_find) {
            assert!(!found[by_key[k][0]], "{name}: absent {k:?} found or erased");
        }
        for k in inserted {
            oracle.insert(*k, value_for(*k, 1));
        }
        let stored = t.find(&pool).unwrap();
        let stored: HashMap<K, V> = pool
            .iter()
            .zip(stored)
            .filter_map(|(k, v)| v.map(|v| (*k, v)))
            .collect();
        // Insert + erase of a present key: the erase always removes a value (old or new); the
        // key survives exactly when the erase ran first, and then the insert found it absent.
        for k in race_update {
            let (ins, era) = (op_of(k, Insert), op_of(k, Erase));
            assert!(found[era], "{name}: erase of present {k:?}");
            match stored.get(k) {
                Some(v) => {
                    assert_eq!(*v, value_for::<K, V>(*k, 1), "{name}: {k:?} value");
                    assert!(!st[ins].was_update(), "{name}: {k:?} erased first: new");
                    oracle.insert(*k, *v);
                }
                None => {
                    assert!(st[ins].was_update(), "{name}: {k:?} inserted first: update");
                    oracle.remove(k);
                }
            }
        }
        // Insert + erase of an absent key: erased exactly when the insert ran first.
        for k in race_insert {
            let (ins, era) = (op_of(k, Insert), op_of(k, Erase));
            assert!(!st[ins].was_update(), "{name}: {k:?} was absent");
            match stored.get(k) {
                Some(v) => {
                    assert!(!found[era], "{name}: {k:?} erased but present");
                    assert_eq!(*v, value_for::<K, V>(*k, 1), "{name}: {k:?} value");
                    oracle.insert(*k, *v);
                }
                None => assert!(found[era], "{name}: {k:?} gone but not reported erased"),
            }
        }
        assert_matches(&format!("{name} after mixed erases"), t.as_ref(), &oracle);
        if t.scheme() == "cpu" {
            // The CPU runs each key's operations in batch order.
            for k in race_find {
                let (f, e) = (op_of(k, Find), op_of(k, Erase));
                assert_eq!(found[f], f < e, "{name}: CPU order of {k:?}");
            }
            for k in race_insert {
                let (i, e) = (op_of(k, Insert), op_of(k, Erase));
                assert_eq!(stored.contains_key(k), e < i, "{name}: CPU order of {k:?}");
            }
        }
    }
}

fn high_load<K: Key, V: Value>() {
    const CAP: usize = 1 << 14;
    for (name, mut t) in backends::<K, V>(CAP) {
        let mut rng = SplitMix64::new(seed_for::<K, V>(4));
        let cap = t.capacity();
        assert!(
            cap >= CAP,
            "{name}: capacity {cap} below the {CAP} asked for"
        );
        let n = cap * 95 / 100;
        let keys = unique_keys::<K>(&mut rng, n, true);
        let mut oracle = HashMap::new();
        for (b, part) in keys.chunks(n.div_ceil(4)).enumerate() {
            let values: Vec<V> = part.iter().map(|&k| value_for(k, 0)).collect();
            let mut st = statuses(part.len());
            let failed = t.insert_with_status(part, &values, &mut st).unwrap();
            assert_eq!(
                failed, 0,
                "{name}: batch {b} of a fill to 0.95: {failed} keys not placed"
            );
            assert_insert_statuses(&name, t.as_ref(), part, &st, &oracle);
            oracle.extend(part.iter().copied().zip(values));
        }
        assert_matches(&format!("{name} at load 0.95"), t.as_ref(), &oracle);

        let values: Vec<V> = keys.iter().map(|&k| value_for(k, 1)).collect();
        let mut st = statuses(n);
        assert_eq!(
            t.insert_with_status(&keys, &values, &mut st).unwrap(),
            0,
            "{name}: update"
        );
        assert!(
            st.iter().all(|s| s.0 & UPDATED != 0),
            "{name}: every key updated"
        );
        oracle.extend(keys.iter().copied().zip(values));

        let half: Vec<K> = keys.iter().copied().step_by(2).collect();
        assert_eq!(t.erase(&half).unwrap(), half.len(), "{name}: erase half");
        for k in &half {
            oracle.remove(k);
        }
        assert_matches(&format!("{name} after erasing half"), t.as_ref(), &oracle);
        let values: Vec<V> = half.iter().map(|&k| value_for(k, 2)).collect();
        let mut st = statuses(half.len());
        assert_eq!(
            t.insert_with_status(&half, &values, &mut st).unwrap(),
            0,
            "{name}: re-insert"
        );
        assert_insert_statuses(&name, t.as_ref(), &half, &st, &oracle);
        oracle.extend(half.iter().copied().zip(values));
        assert_matches(
            &format!("{name} after re-inserting half"),
            t.as_ref(),
            &oracle,
        );
    }
}

/// Insert `capacity() + extra` distinct keys into the tables that fill to their capacity
/// (`common::fills_to_capacity`; the slab hash, DyCuckoo and the two-level table grow instead):
/// the failures are reported per key, `insert` says `TableFull`, every placed key is there with
/// its value and nothing else is.
///
/// The keys avoid the sentinel values: on the GPU those live beside the slots and do not use
/// capacity. The tables are small enough that probing covers every slot, so a full table
/// holds exactly `capacity()` keys.
fn full_table<K: Key, V: Value>() {
    const CAP: usize = 1000;
    for (name, mut t) in backends::<K, V>(CAP) {
        if !fills_to_capacity(t.scheme()) {
            continue; // grows instead (tests/slab.rs exhausts its budget)
        }
        let mut rng = SplitMix64::new(seed_for::<K, V>(5));
        let cap = t.capacity();
        let extra = cap / 2 + 7;
        let all = unique_keys::<K>(&mut rng, cap + extra + 40, false);
        let (keys, fresh) = all.split_at(cap + extra);
        let values: Vec<V> = keys.iter().map(|&k| value_for(k, 0)).collect();
        let mut st = statuses(keys.len());
        let failed = t.insert_with_status(keys, &values, &mut st).unwrap();
        let failures = st.iter().filter(|s| s.is_failure()).count();
        assert_eq!(
            failed, failures,
            "{name}: returned count vs failure statuses"
        );
        let placed = keys.len() - failed;
        assert_eq!(
            placed, cap,
            "{name}: a full table holds capacity() = {cap} keys"
        );
        let mut oracle = HashMap::new();
        let mut lost = Vec::new();
        for ((k, v), s) in keys.iter().zip(&values).zip(&st) {
            if s.is_ok() {
                assert!(
                    !s.was_update(),
                    "{name}: distinct key {k:?} reported UPDATED"
                );
                oracle.insert(*k, *v);
            } else {
                assert_eq!(
                    s.0 & !FAILURE_MASK,
                    0,
                    "{name}: failure with info bits: {s:?}"
                );
                assert_ne!(
                    s.0 & (TABLE_FULL | PROBE_LIMIT),
                    0,
                    "{name}: failure reason: {s:?}"
                );
                lost.push(*k);
            }
        }
        assert_matches(&format!("{name} when full"), t.as_ref(), &oracle);
        assert_eq!(
            t.find(&lost).unwrap(),
            vec![None; lost.len()],
            "{name}: failed keys found"
        );
        assert!(
            t.contains(&lost).unwrap().iter().all(|c| !c),
            "{name}: failed keys contained"
        );

        // insert() of new keys into the full table: TableFull, nothing stored.
        let more = &fresh[..10];
        let more_values: Vec<V> = more.iter().map(|&k| value_for(k, 1)).collect();
        match t.insert(more, &more_values) {
            Err(Error::TableFull {
                failed,
                batch,
                capacity,
            }) => {
                assert_eq!(
                    (failed, batch, capacity),
                    (10, 10, cap),
                    "{name}: TableFull fields"
                );
            }
            other => panic!("{name}: insert into a full table gave {other:?}, not TableFull"),
        }
        assert_matches(
            &format!("{name} after refused inserts"),
            t.as_ref(),
            &oracle,
        );

        // Updates of present keys still succeed.
        let upd: Vec<K> = oracle.keys().copied().take(100).collect();
        let upd_values: Vec<V> = upd.iter().map(|&k| value_for(k, 2)).collect();
        t.insert(&upd, &upd_values)
            .unwrap_or_else(|e| panic!("{name}: update when full: {e}"));
        oracle.extend(upd.iter().copied().zip(upd_values));
        assert_matches(
            &format!("{name} after updates when full"),
            t.as_ref(),
            &oracle,
        );

        // Erase 10, then 15 new keys compete for the 10 free places.
        let gone: Vec<K> = oracle.keys().copied().take(10).collect();
        assert_eq!(t.erase(&gone).unwrap(), 10, "{name}: erase when full");
        for k in &gone {
            oracle.remove(k);
        }
        let new = &fresh[10..25];
        let new_values: Vec<V> = new.iter().map(|&k| value_for(k, 3)).collect();
        let mut st = statuses(new.len());
        let failed = t.insert_with_status(new, &new_values, &mut st).unwrap();
        assert_eq!(failed, 5, "{name}: 15 new keys for 10 free places");
        for ((k, v), s) in new.iter().zip(&new_values).zip(&st) {
            if s.is_ok() {
                oracle.insert(*k, *v);
            }
        }
        assert_matches(&format!("{name} after refilling"), t.as_ref(), &oracle);
    }
}

/// Mismatched lengths are `InvalidInput` and change nothing; empty batches are fine no-ops.
fn bad_input<K: Key, V: Value>() {
    for (name, mut t) in backends::<K, V>(100) {
        let mut rng = SplitMix64::new(seed_for::<K, V>(6));
        let keys = unique_keys::<K>(&mut rng, 3, true);
        let values: Vec<V> = keys.iter().map(|&k| value_for(k, 0)).collect();
        let invalid = |r: warpmap::Result<()>, what: &str| match r {
            Err(Error::InvalidInput(_)) => {}
            other => panic!("{name}: {what}: expected InvalidInput, got {other:?}"),
        };
        invalid(t.insert(&keys, &values[..2]), "insert with fewer values");
        let mut st = statuses(2);
        invalid(
            t.insert_with_status(&keys, &values, &mut st).map(drop),
            "status too short",
        );
        let mut st = statuses(4);
        invalid(
            t.insert_with_status(&keys, &values, &mut st).map(drop),
            "status too long",
        );
        invalid(
            t.insert_with_status(&keys[..2], &values, &mut st[..2])
                .map(drop),
            "values too long",
        );
        let mut out = vec![V::zeroed(); 3];
        let mut found = vec![false; 2];
        invalid(
            t.find_into(&keys, &mut out, &mut found).map(drop),
            "find_into found too short",
        );
        let mut found = vec![false; 3];
        invalid(
            t.find_into(&keys, &mut out[..1], &mut found).map(drop),
            "find_into values too short",
        );
        assert_eq!(
            t.len().unwrap(),
            0,
            "{name}: a rejected call changed the table"
        );
        assert_eq!(contents(&name, t.as_ref()).len(), 0);

        // Empty batches, on an empty and on a non-empty table.
        let mut oracle = HashMap::new();
        for pass in 0..2 {
            let what = format!("{name}, empty batches (pass {pass})");
            t.insert(&[], &[])
                .unwrap_or_else(|e| panic!("{what}: insert: {e}"));
            assert_eq!(
                t.insert_with_status(&[], &[], &mut []).unwrap(),
                0,
                "{what}"
            );
            assert_eq!(t.find(&[]).unwrap(), Vec::<Option<V>>::new(), "{what}");
            assert_eq!(t.find_into(&[], &mut [], &mut []).unwrap(), 0, "{what}");
            assert_eq!(t.contains(&[]).unwrap(), vec![false; 0], "{what}");
            assert_eq!(t.erase(&[]).unwrap(), 0, "{what}");
            assert_matches(&what, t.as_ref(), &oracle);
            t.insert(&keys, &values).unwrap();
            oracle.extend(keys.iter().copied().zip(values.iter().copied()));
        }
    }
    // Capacity 0.
    assert!(
        matches!(CpuTable::<K, V>::new(0), Err(Error::InvalidInput(_))),
        "CpuTable::new(0)"
    );
    assert!(matches!(
        CpuTable::<K, V>::with_shards(0, 1),
        Err(Error::InvalidInput(_))
    ));
    let gpu = warpmap::table::warpdrive::supports_widths(K::BYTES, V::BYTES)
        .then(gpu)
        .flatten();
    if let Some(gpu) = gpu {
        let r = warpmap::WarpDrive::<K, V>::new(gpu, warpmap::WarpDriveConfig::new(0));
        assert!(
            matches!(r, Err(Error::InvalidInput(_))),
            "WarpDrive capacity 0: {:?}",
            r.err().map(|e| e.to_string())
        );
    }
}

/// Keys that differ only in their last byte are distinct keys. For wide keys they share their
/// first 8 bytes, so a table that compares (or stores) only a prefix of the key merges them.
fn last_byte_distinct<K: Key, V: Value>() {
    const CAP: usize = 1 << 10;
    for (name, mut t) in backends::<K, V>(CAP) {
        let mut rng = SplitMix64::new(seed_for::<K, V>(12));
        let base = unique_keys::<K>(&mut rng, 64, true);
        let mut seen = HashSet::new();
        let keys: Vec<K> = base
            .iter()
            .flat_map(|&k| [0u8, 1, 0x80, 0xff].map(|flip| with_last_byte(k, flip)))
            .filter(|k| seen.insert(*k))
            .collect();
        assert!(keys.len() > 3 * base.len(), "{name}: variants collide");
        let values: Vec<V> = keys.iter().map(|&k| value_for(k, 0)).collect();
        let mut st = statuses(keys.len());
        let failed = t.insert_with_status(&keys, &values, &mut st).unwrap();
        assert_eq!(failed, 0, "{name}");
        let mut oracle = HashMap::new();
        assert_insert_statuses(&name, t.as_ref(), &keys, &st, &oracle);
        oracle.extend(keys.iter().copied().zip(values));
        assert_matches(
            &format!("{name} after inserting last-byte variants"),
            t.as_ref(),
            &oracle,
        );

        // Erase the variants with the last byte flipped by 1: exactly those go.
        let gone: Vec<K> = base.iter().map(|&k| with_last_byte(k, 1)).collect();
        let present: HashSet<K> = gone
            .iter()
            .filter(|k| oracle.contains_key(k))
            .copied()
            .collect();
        assert_eq!(
            t.erase(&gone).unwrap(),
            present.len(),
            "{name}: erase count"
        );
        for k in &present {
            oracle.remove(k);
        }
        assert_matches(
            &format!("{name} after erasing one variant"),
            t.as_ref(),
            &oracle,
        );

        // Other last bytes are absent; updates of one variant leave its neighbours alone.
        let probes: Vec<K> = base.iter().map(|&k| with_last_byte(k, 0x7f)).collect();
        let expect: Vec<Option<V>> = probes.iter().map(|k| oracle.get(k).copied()).collect();
        assert_eq!(
            t.find(&probes).unwrap(),
            expect,
            "{name}: find of other last bytes"
        );
        let upd: Vec<K> = base.iter().map(|&k| with_last_byte(k, 0x80)).collect();
        let upd_values: Vec<V> = upd.iter().map(|&k| value_for(k, 1)).collect();
        t.insert(&upd, &upd_values).unwrap();
        oracle.extend(upd.iter().copied().zip(upd_values));
        assert_matches(
            &format!("{name} after updating one variant"),
            t.as_ref(),
            &oracle,
        );
    }
}

/// Byte-array special keys: `fill` everywhere, then `first` in byte 0 and `last` in the last byte.
fn pattern<const N: usize>(fill: u8, first: u8, last: u8) -> [u8; N] {
    let mut a = [fill; N];
    a[0] = first;
    a[N - 1] = last;
    a
}

/// The first 8 bytes all ones, the rest zeros (a narrow sentinel in the prefix of a wide key).
fn ones_prefix<const N: usize>() -> [u8; N] {
    let mut a = [0; N];
    a[..8].fill(0xff);
    a
}

/// The special keys of a byte-array key type: both sentinel patterns, zero, and their variants in
/// the last byte and the prefix.
fn array_specials<const N: usize>() -> Vec<[u8; N]> {
    vec![
        [0xff; N],
        pattern(0xff, 0xfe, 0xff),
        [0; N],
        pattern(0, 0, 1),
        pattern(0xff, 0xff, 0xfe),
        pattern(0xff, 0xfe, 0xfe),
        ones_prefix(),
    ]
}

macro_rules! contract {
    ($($module:ident: $k:ty, $v:ty, specials $s:expr;)*) => {$(
        mod $module {
            #[test]
            fn random_ops() {
                super::random_ops::<$k, $v>();
            }
            #[test]
            fn duplicates_in_one_batch() {
                super::duplicates_in_one_batch::<$k, $v>();
            }
            #[test]
            fn sentinel_keys() {
                super::sentinel_keys_everywhere::<$k, $v>(&$s);
            }
            #[test]
            fn erase_then_reinsert() {
                super::erase_then_reinsert::<$k, $v>();
            }
            #[test]
            fn high_load() {
                super::high_load::<$k, $v>();
            }
            #[test]
            fn rehash() {
                super::rehash::<$k, $v>();
            }
            #[test]
            fn insert_if_absent() {
                super::insert_if_absent::<$k, $v>();
            }
            #[test]
            fn mixed_batch() {
                super::mixed_batch::<$k, $v>();
            }
            #[test]
            fn reserve() {
                super::reserve::<$k, $v>();
            }
            #[test]
            fn mixed_erase() {
                super::mixed_erase::<$k, $v>();
            }
            #[test]
            fn full_table() {
                super::full_table::<$k, $v>();
            }
            #[test]
            fn bad_input() {
                super::bad_input::<$k, $v>();
            }
            #[test]
            fn last_byte_distinct() {
                super::last_byte_distinct::<$k, $v>();
            }
        }
    )*};
}

contract! {
    u32_u32: u32, u32, specials [u32::MAX, u32::MAX - 1, 0, 1, u32::MAX - 2, 1 << 31];
    u32_u64: u32, u64, specials [u32::MAX, u32::MAX - 1, 0, 1];
    u64_u32: u64, u32, specials [u64::MAX, u64::MAX - 1, 0, 1, u32::MAX as u64, u64::MAX - 2];
    u64_u64: u64, u64, specials [u64::MAX, u64::MAX - 1, 0, 1, 1 << 63];
    i32_u32: i32, u32, specials [-1, -2, 0, 1, i32::MIN, i32::MAX];
    i32_i64: i32, i64, specials [-1, -2, 0, i32::MIN];
    i64_u64: i64, u64, specials [-1, -2, 0, 1, i64::MIN, i64::MAX, u32::MAX as i64];
    i64_i32: i64, i32, specials [-1, -2, 0, i64::MIN];
    u128_u64: u128, u64, specials [
        u128::MAX, u128::MAX - 1, 0, 1, u64::MAX as u128, (u64::MAX as u128) << 64,
        u128::MAX >> 8, 1 << 127,
    ];
    i128_u32: i128, u32, specials [
        -1, -2, 0, 1, i128::MIN, i128::MAX, u64::MAX as i128, -1 ^ (1 << 120),
    ];
    b16_u64: [u8; 16], u64, specials super::array_specials::<16>();
    b32_u32: [u8; 32], u32, specials super::array_specials::<32>();
    b64_u64: [u8; 64], u64, specials super::array_specials::<64>();
    u64_b32: u64, [u8; 32], specials [u64::MAX, u64::MAX - 1, 0, 1, 1 << 63];
    b12_b256: [u8; 12], [u8; 256], specials super::array_specials::<12>();
    u32_b16: u32, [u8; 16], specials [u32::MAX, u32::MAX - 1, 0, 1, 1 << 31];
}

/// GPU-only cases. Each returns early (skipped) without a GPU unless `WARPMAP_REQUIRE_GPU` is set.
mod gpu {
    use super::*;
    use warpmap::{DeviceHashTable, WarpDrive, WarpDriveConfig};

    /// Every `DeviceHashTable` operation on device buffers, against the oracle.
    fn device_buffers<K: Key, V: Value>() {
        let Some(gpu) = common::gpu() else { return };
        const N: usize = 1 << 18;
        for g in [1, 4, 8, 32] {
            let name = format!("warpdrive/g{g} <{}, {}>", K::NAME, V::NAME);
            let mut t = warpdrive::<K, V>(&gpu, WarpDriveConfig::new(2 * N).group_size(g));
            let mut rng = SplitMix64::new(seed_for::<K, V>(100 + g as u64));
            let all = unique_keys::<K>(&mut rng, N + N / 4 + N / 4, true);
            let (keys, rest) = all.split_at(N);
            let (later, absent) = rest.split_at(N / 4);
            let mut oracle = HashMap::new();

            // Async insert with a status buffer.
            let values: Vec<V> = keys.iter().map(|&k| value_for(k, 0)).collect();
            let dk = gpu.upload(keys).unwrap();
            let dv = gpu.upload(&values).unwrap();
            let mut ds = gpu.alloc_filled::<u32>(N, 0xee).unwrap();
            t.insert_device_async(&dk, &dv, Some(&mut ds)).unwrap();
            t.synchronize()
                .unwrap_or_else(|e| panic!("{name}: synchronize after insert: {e}"));
            let st: Vec<InsertStatus> = gpu
                .download(&ds)
                .unwrap()
                .into_iter()
                .map(InsertStatus)
                .collect();
            assert_insert_statuses(&name, &t, keys, &st, &oracle);
            oracle.extend(keys.iter().copied().zip(values.iter().copied()));
            assert_eq!(t.len().unwrap(), N, "{name}: len after device insert");

            // Async insert without a status buffer: updates of the first half.
            let half = &keys[..N / 2];
            let half_values: Vec<V> = half.iter().map(|&k| value_for(k, 1)).collect();
            let dhk = gpu.upload(half).unwrap();
            let dhv = gpu.upload(&half_values).unwrap();
            t.insert_device_async(&dhk, &dhv, None).unwrap();
            t.synchronize()
                .unwrap_or_else(|e| panic!("{name}: synchronize after update: {e}"));
            oracle.extend(half.iter().copied().zip(half_values));

            // Synchronous device insert of new keys.
            let later_values: Vec<V> = later.iter().map(|&k| value_for(k, 2)).collect();
            let dlk = gpu.upload(later).unwrap();
            let dlv = gpu.upload(&later_values).unwrap();
            t.insert_device(&dlk, &dlv)
                .unwrap_or_else(|e| panic!("{name}: insert_device: {e}"));
            oracle.extend(later.iter().copied().zip(later_values));

            // find_device and contains_device_async over present and absent keys.
            let mut queries: Vec<K> = all.clone();
            queries.rotate_left(N / 3);
            let dq = gpu.upload(&queries).unwrap();
            let marker = V::from_bits(0x5a5a_5a5a_5a5a_5a5a);
            let mut dout = gpu.upload(&vec![marker; queries.len()]).unwrap();
            let mut dfound = gpu.alloc_filled::<u8>(queries.len(), 0xee).unwrap();
            t.find_device(&dq, &mut dout, &mut dfound).unwrap();
            let out = gpu.download(&dout).unwrap();
            let found = gpu.download(&dfound).unwrap();
            for (i, k) in queries.iter().enumerate() {
                match oracle.get(k) {
                    Some(v) => {
                        assert_eq!(found[i], 1, "{name}: find_device missed {k:?}");
                        assert_eq!(out[i], *v, "{name}: find_device value of {k:?}");
                    }
                    None => {
                        assert_eq!(found[i], 0, "{name}: find_device found absent {k:?}");
                        assert_eq!(out[i], marker, "{name}: find_device wrote a miss");
                    }
                }
            }
            let mut dc = gpu.alloc_filled::<u8>(queries.len(), 0xee).unwrap();
            t.contains_device_async(&dq, &mut dc).unwrap();
            t.synchronize().unwrap();
            let c = gpu.download(&dc).unwrap();
            for (i, k) in queries.iter().enumerate() {
                assert_eq!(
                    c[i],
                    oracle.contains_key(k) as u8,
                    "{name}: contains_device {k:?}"
                );
            }
            assert!(absent.iter().all(|k| !oracle.contains_key(k)));

            // Erase a quarter of the keys plus some absent ones.
            let mut gone: Vec<K> = keys[N / 4..N / 2].to_vec();
            gone.extend_from_slice(&absent[..1000]);
            let dg = gpu.upload(&gone).unwrap();
            t.erase_device_async(&dg).unwrap();
            t.synchronize().unwrap();
            for k in &gone {
                oracle.remove(k);
            }
            assert_matches(&name, &t, &oracle);

            // Device buffers of mismatched lengths.
            let short = gpu.upload(&values[..10]).unwrap();
            let r = t.insert_device_async(&dk, &short, None);
            assert!(
                matches!(r, Err(Error::InvalidInput(_))),
                "{name}: insert_device_async lengths: {r:?}"
            );
            let mut short_status = gpu.alloc::<u32>(10).unwrap();
            let r = t.insert_device_async(&dk, &dv, Some(&mut short_status));
            assert!(
                matches!(r, Err(Error::InvalidInput(_))),
                "{name}: status length: {r:?}"
            );
            let mut short_found = gpu.alloc::<u8>(10).unwrap();
            let r = t.find_device_async(&dq, &mut dout, &mut short_found);
            assert!(
                matches!(r, Err(Error::InvalidInput(_))),
                "{name}: find_device_async lengths: {r:?}"
            );
            let r = t.contains_device_async(&dq, &mut short_found);
            assert!(
                matches!(r, Err(Error::InvalidInput(_))),
                "{name}: contains lengths: {r:?}"
            );
            t.synchronize().unwrap();
            assert_matches(&format!("{name} after rejected calls"), &t, &oracle);
        }
    }

    #[test]
    fn device_buffers_u32_u32() {
        device_buffers::<u32, u32>();
    }
    #[test]
    fn device_buffers_u32_u64() {
        device_buffers::<u32, u64>();
    }
    #[test]
    fn device_buffers_u64_u32() {
        device_buffers::<u64, u32>();
    }
    #[test]
    fn device_buffers_u64_u64() {
        device_buffers::<u64, u64>();
    }
    #[test]
    fn device_buffers_i64_u64() {
        device_buffers::<i64, u64>();
    }

    /// An async insert into a table too small for it: `synchronize` says `TableFull` (once), the
    /// placed keys are there, and the status buffer says which failed.
    fn async_overflow<K: Key, V: Value>() {
        let Some(gpu) = common::gpu() else { return };
        for g in [1, 4, 32] {
            let name = format!("warpdrive/g{g} <{}, {}>", K::NAME, V::NAME);
            let mut t = warpdrive::<K, V>(&gpu, WarpDriveConfig::new(1000).group_size(g));
            let cap = t.capacity();
            let mut rng = SplitMix64::new(seed_for::<K, V>(200 + g as u64));
            let keys = unique_keys::<K>(&mut rng, 5000, false);
            let values: Vec<V> = keys.iter().map(|&k| value_for(k, 0)).collect();
            let dk = gpu.upload(&keys).unwrap();
            let dv = gpu.upload(&values).unwrap();
            t.insert_device_async(&dk, &dv, None).unwrap();
            match t.synchronize() {
                Err(e @ Error::TableFull { failed, batch, .. }) => {
                    assert_eq!(
                        failed,
                        keys.len() - cap,
                        "{name}: failures reported by synchronize"
                    );
                    // The asynchronous report does not know its batch, and says so.
                    assert_eq!(batch, 0, "{name}: {e}");
                    assert!(e.to_string().contains("asynchronous"), "{name}: {e}");
                }
                other => panic!("{name}: synchronize after overflow gave {other:?}, not TableFull"),
            }
            t.synchronize()
                .unwrap_or_else(|e| panic!("{name}: failures reported twice: {e}"));
            assert_eq!(
                t.len().unwrap(),
                cap,
                "{name}: a full table holds capacity() keys"
            );
            let stored = contents(&name, &t);
            for (k, v) in &stored {
                let i = keys
                    .iter()
                    .position(|x| x == k)
                    .unwrap_or_else(|| panic!("{name}: {k:?} not inserted"));
                assert_eq!(*v, values[i], "{name}: value of {k:?}");
            }

            // Again after clear, with a status buffer: it says which keys failed.
            t.clear().unwrap();
            t.synchronize().unwrap();
            let mut ds = gpu.alloc_filled::<u32>(keys.len(), 0xee).unwrap();
            t.insert_device_async(&dk, &dv, Some(&mut ds)).unwrap();
            assert!(
                matches!(t.synchronize(), Err(Error::TableFull { .. })),
                "{name}: second overflow"
            );
            let st = gpu.download(&ds).unwrap();
            let mut oracle = HashMap::new();
            for ((k, v), s) in keys.iter().zip(&values).zip(&st) {
                let s = InsertStatus(*s);
                if s.is_ok() {
                    assert!(!s.was_update(), "{name}: {k:?} UPDATED in a cleared table");
                    oracle.insert(*k, *v);
                } else {
                    assert_ne!(
                        s.0 & (TABLE_FULL | PROBE_LIMIT),
                        0,
                        "{name}: failure bits {s:?}"
                    );
                }
            }
            assert_eq!(oracle.len(), cap, "{name}: placed after clear");
            assert_matches(&name, &t, &oracle);
        }
    }

    #[test]
    fn async_insert_overflow_reports_table_full_u32_u32() {
        async_overflow::<u32, u32>();
    }
    #[test]
    fn async_insert_overflow_reports_table_full_u64_u64() {
        async_overflow::<u64, u64>();
    }

    /// `max_probes(1)` with group size 1 at load 0.9: some keys hit the probe limit; they are
    /// reported (PROBE_LIMIT) and absent, every other key is present: nothing is lost.
    fn probe_limit<K: Key, V: Value>() {
        let Some(gpu) = common::gpu() else { return };
        let name = format!("warpdrive/g1/max_probes=1 <{}, {}>", K::NAME, V::NAME);
        let mut t = warpdrive::<K, V>(
            &gpu,
            WarpDriveConfig::new(1 << 16).group_size(1).max_probes(1),
        );
        assert_eq!(t.max_probes(), 1);
        let mut rng = SplitMix64::new(seed_for::<K, V>(300));
        let n = t.capacity() * 9 / 10;
        let keys = unique_keys::<K>(&mut rng, n, true);
        let values: Vec<V> = keys.iter().map(|&k| value_for(k, 0)).collect();
        let mut st = statuses(n);
        let failed = t.insert_with_status(&keys, &values, &mut st).unwrap();
        assert!(
            failed > 0,
            "{name}: one probe at load 0.9 must fail for some keys"
        );
        let mut oracle = HashMap::new();
        let mut lost = Vec::new();
        for ((k, v), s) in keys.iter().zip(&values).zip(&st) {
            if s.is_ok() {
                oracle.insert(*k, *v);
            } else {
                assert_eq!(s.0, PROBE_LIMIT, "{name}: failure status of {k:?}");
                lost.push(*k);
            }
        }
        assert_eq!(lost.len(), failed, "{name}: failure count");
        assert_matches(&name, &t, &oracle);
        assert!(
            t.contains(&lost).unwrap().iter().all(|c| !c),
            "{name}: a failed key is present"
        );

        // insert() of the failed keys again: their one window is still full (nothing was
        // erased), so all fail again, with TableFull, and nothing changes.
        let lost_values: Vec<V> = lost.iter().map(|&k| value_for(k, 0)).collect();
        match t.insert(&lost, &lost_values) {
            Err(Error::TableFull { failed, batch, .. }) => {
                assert_eq!(
                    (failed, batch),
                    (lost.len(), lost.len()),
                    "{name}: TableFull fields"
                )
            }
            other => panic!("{name}: re-insert of failed keys gave {other:?}"),
        }
        assert_matches(&name, &t, &oracle);
    }

    #[test]
    fn probe_limit_reports_and_loses_nothing_u32_u32() {
        probe_limit::<u32, u32>();
    }
    #[test]
    fn probe_limit_reports_and_loses_nothing_u64_u64() {
        probe_limit::<u64, u64>();
    }

    fn invalid_config<K: Key, V: Value>() {
        let Some(gpu) = common::gpu() else { return };
        let label = format!("<{}, {}>", K::NAME, V::NAME);
        let err = |c: WarpDriveConfig| WarpDrive::<K, V>::new(gpu.clone(), c).err();
        for g in [0, 3, 5, 64, 33] {
            let e = err(WarpDriveConfig::new(1000).group_size(g));
            assert!(
                matches!(e, Some(Error::InvalidInput(_))),
                "{label} group size {g}: {e:?}"
            );
        }
        let e = err(WarpDriveConfig::new(0));
        assert!(
            matches!(e, Some(Error::InvalidInput(_))),
            "{label} capacity 0: {e:?}"
        );
        let e = err(WarpDriveConfig::new(1000).max_probes(0));
        assert!(
            matches!(e, Some(Error::InvalidInput(_))),
            "{label} max_probes 0: {e:?}"
        );
        // Far beyond device memory: an error, never a panic or an attempt.
        for g in [1, 4, 32] {
            for cap in [1usize << 40, 1 << 36, 1 << 35] {
                let e = err(WarpDriveConfig::new(cap).group_size(g));
                assert!(
                    matches!(e, Some(Error::OutOfMemory { .. } | Error::Unsupported(_))),
                    "{label} capacity {cap}, group size {g}: {e:?}"
                );
            }
        }
    }

    #[test]
    fn invalid_config_u32_u32() {
        invalid_config::<u32, u32>();
    }
    #[test]
    fn invalid_config_u64_u64() {
        invalid_config::<u64, u64>();
    }
}
