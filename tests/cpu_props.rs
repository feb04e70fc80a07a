//! Property tests of the CPU backend against a `HashMap` oracle.
//!
//! - `ops_match_oracle_*`: arbitrary sequences of insert batches (with duplicates), erase
//!   batches, finds, contains and clears on a small key space (sentinel keys included, and pairs
//!   of keys that differ only in their last byte) and a small capacity, with any shard count;
//!   narrow keys and a wide one (`[u8; 32]`). The oracle models the CPU table exactly where it is
//!   deterministic (per-key statuses, last occurrence wins) and by counting where it is not (which
//!   new keys win the last free places when shards race for them).
//! - `capacity_rule_*`: never more than `capacity` keys; an insert fails exactly when there is no
//!   room (new distinct keys beyond the free places), and the failed keys are absent.
//! - `shared_writers_respect_capacity`: threads inserting through `&self` at once.
//! - `mixed_batches_replay_in_batch_order_*`: mixed batches of inserts, finds and erases give
//!   the outputs and the state of running their operations one by one in batch order.
//! - `multimap_ops_match_oracle_*`: arbitrary sequences of `CpuMultiMap` inserts (duplicate keys
//!   and equal pairs), erase_all, find_all, count and clear against a `HashMap<K, Vec<V>>`
//!   oracle that keeps insertion order (what the CPU multimap promises), at a small capacity:
//!   exactly `min(batch, room)` pairs are placed, the refused ones are absent.

mod common;

use common::{mix, sentinel_keys, with_last_byte};
use proptest::prelude::*;
use proptest::sample::select;
use std::collections::{HashMap, HashSet};
use warpmap::status::{OK, TABLE_FULL, UPDATED};
use warpmap::{
    CpuMultiMap, CpuTable, Error, HashTable, InsertStatus, Key, MixedOp, MultiMap, Value,
};

#[derive(Clone, Debug)]
enum Op {
    /// (key index, value bits) pairs; `true`: through `insert_with_status`, else `insert`.
    Insert(Vec<(u8, u64)>, bool),
    Erase(Vec<u8>),
    Find(Vec<u8>),
    Contains(Vec<u8>),
    Clear,
}

/// Key number `i` of the small key space: 0 and 1 are the sentinel patterns, 2 is zero, the
/// others are spread over the whole key width, and each odd one from 5 on differs from the key
/// before it only in its last byte (wide keys: the same first 8 bytes).
fn key_of<K: Key>(i: u8) -> K {
    match i {
        0 | 1 => sentinel_keys::<K>()[i as usize],
        2 => K::from_bits(0),
        i if i >= 5 && i % 2 == 1 => with_last_byte(key_of::<K>(i - 1), 0x80),
        i => K::from_bits(mix(i as u64)),
    }
}

fn op_strategy(key_space: u8, max_batch: usize) -> impl Strategy<Value = Op> {
    let keys = move || prop::collection::vec(0..key_space, 0..max_batch);
    prop_oneof![
        5 => (prop::collection::vec((0..key_space, any::<u64>()), 0..max_batch), any::<bool>())
            .prop_map(|(b, with_status)| Op::Insert(b, with_status)),
        2 => keys().prop_map(Op::Erase),
        2 => keys().prop_map(Op::Find),
        1 => keys().prop_map(Op::Contains),
        1 => Just(Op::Clear),
    ]
}

/// Checks `len`, `retrieve_all` and `find` of every key of the space against the oracle.
fn check_state<K: Key, V: Value>(
    t: &CpuTable<K, V>,
    oracle: &HashMap<K, V>,
    key_space: u8,
    what: &str,
) {
    assert_eq!(t.len().unwrap(), oracle.len(), "{what}: len");
    assert!(
        t.len().unwrap() <= t.capacity(),
        "{what}: more keys than capacity"
    );
    let (keys, values) = t.retrieve_all().unwrap();
    let got: HashMap<K, V> = keys.iter().copied().zip(values).collect();
    assert_eq!(
        got.len(),
        keys.len(),
        "{what}: retrieve_all returned a key twice"
    );
    assert_eq!(&got, oracle, "{what}: retrieve_all");
    let all: Vec<K> = (0..key_space).map(key_of).collect();
    let expect: Vec<Option<V>> = all.iter().map(|k| oracle.get(k).copied()).collect();
    assert_eq!(
        t.find(&all).unwrap(),
        expect,
        "{what}: find over the key space"
    );
}

/// Applies one insert batch to the table and checks it against the oracle (the state before),
/// then brings the oracle up to date.
fn insert_batch<K: Key, V: Value>(
    t: &mut CpuTable<K, V>,
    oracle: &mut HashMap<K, V>,
    keys: &[K],
    values: &[V],
    with_status: bool,
    what: &str,
) {
    let room = t.capacity() - oracle.len();
    let mut last: HashMap<K, V> = HashMap::new();
    let mut new_keys: Vec<K> = Vec::new();
    for (k, v) in keys.iter().zip(values) {
        if last.insert(*k, *v).is_none() && !oracle.contains_key(k) {
            new_keys.push(*k);
        }
    }
    let will_place = new_keys.len().min(room);
    let placed: HashSet<K> = if with_status {
        let mut st = vec![InsertStatus(0xdead_beef); keys.len()];
        let failed = t.insert_with_status(keys, values, &mut st).unwrap();
        let mut seen = HashSet::new();
        let mut placed = HashSet::new();
        let mut failed_keys = HashSet::new();
        for (i, (k, s)) in keys.iter().zip(&st).enumerate() {
            let first = seen.insert(*k);
            if oracle.contains_key(k) {
                assert_eq!(s.0, UPDATED, "{what}: present key {k:?} at {i}");
            } else if first {
                match s.0 {
                    OK => placed.insert(*k),
                    TABLE_FULL => failed_keys.insert(*k),
                    other => panic!("{what}: new key {k:?} at {i}: status {other:#x}"),
                };
            } else if placed.contains(k) {
                assert_eq!(s.0, UPDATED, "{what}: repeat of placed key {k:?} at {i}");
            } else {
                assert_eq!(s.0, TABLE_FULL, "{what}: repeat of failed key {k:?} at {i}");
            }
        }
        let failures = st.iter().filter(|s| s.is_failure()).count();
        assert_eq!(failed, failures, "{what}: returned failure count");
        assert_eq!(failed_keys.is_empty(), failed == 0, "{what}: failures");
        placed
    } else {
        match t.insert(keys, values) {
            Ok(()) => assert_eq!(
                will_place,
                new_keys.len(),
                "{what}: insert() Ok without room"
            ),
            Err(Error::TableFull {
                failed,
                batch,
                capacity,
            }) => {
                assert!(will_place < new_keys.len(), "{what}: TableFull with room");
                assert!(
                    failed > 0 && batch == keys.len() && capacity == t.capacity(),
                    "{what}"
                );
            }
            Err(e) => panic!("{what}: insert: {e}"),
        }
        let found = t.contains(&new_keys).unwrap();
        new_keys
            .iter()
            .zip(found)
            .filter(|(_, f)| *f)
            .map(|(k, _)| *k)
            .collect()
    };
    // The capacity rule: new keys are placed exactly while there is room.
    assert_eq!(
        placed.len(),
        will_place,
        "{what}: {} new keys, room {room}",
        new_keys.len()
    );
    for (k, v) in last {
        if oracle.contains_key(&k) || placed.contains(&k) {
            oracle.insert(k, v); // the last occurrence wins on the CPU
        }
    }
}

fn run_ops<K: Key, V: Value>(capacity: usize, shards: usize, key_space: u8, ops: &[Op]) {
    let mut t = CpuTable::<K, V>::with_shards(capacity, shards).unwrap();
    let mut oracle: HashMap<K, V> = HashMap::new();
    for (n, op) in ops.iter().enumerate() {
        let what = format!("<{}, {}> op {n} {op:?}", K::NAME, V::NAME);
        match op {
            Op::Insert(batch, with_status) => {
                let keys: Vec<K> = batch.iter().map(|&(i, _)| key_of(i)).collect();
                let values: Vec<V> = batch.iter().map(|&(_, v)| V::from_bits(v)).collect();
                insert_batch(&mut t, &mut oracle, &keys, &values, *with_status, &what);
            }
            Op::Erase(idx) => {
                let keys: Vec<K> = idx.iter().map(|&i| key_of(i)).collect();
                let present: HashSet<K> = keys
                    .iter()
                    .filter(|k| oracle.contains_key(k))
                    .copied()
                    .collect();
                assert_eq!(
                    t.erase(&keys).unwrap(),
                    present.len(),
                    "{what}: erase count"
                );
                for k in present {
                    oracle.remove(&k);
                }
            }
            Op::Find(idx) => {
                let keys: Vec<K> = idx.iter().map(|&i| key_of(i)).collect();
                let marker = V::from_bits(0x1234_5678_9abc_def0);
                let mut values = vec![marker; keys.len()];
                let mut found = vec![true; keys.len()];
                let hits = t.find_into(&keys, &mut values, &mut found).unwrap();
                for i in 0..keys.len() {
                    let expect = oracle.get(&keys[i]);
                    assert_eq!(found[i], expect.is_some(), "{what}: found[{i}]");
                    assert_eq!(values[i], *expect.unwrap_or(&marker), "{what}: values[{i}]");
                }
                assert_eq!(hits, found.iter().filter(|f| **f).count(), "{what}: hits");
            }
            Op::Contains(idx) => {
                let keys: Vec<K> = idx.iter().map(|&i| key_of(i)).collect();
                let expect: Vec<bool> = keys.iter().map(|k| oracle.contains_key(k)).collect();
                assert_eq!(t.contains(&keys).unwrap(), expect, "{what}");
            }
            Op::Clear => {
                t.clear().unwrap();
                oracle.clear();
            }
        }
        assert_eq!(t.len().unwrap(), oracle.len(), "{what}: len");
        assert!(t.len().unwrap() <= capacity, "{what}: over capacity");
    }
    check_state(&t, &oracle, key_space, "final state");
}

const KEY_SPACE: u8 = 24;

/// Mixed batches (op, key index, value bits) on a table with room for every key, replayed one
/// operation at a time in batch order on the oracle: every output and the final state agree.
/// Outputs of the other kinds of operation stay untouched.
fn run_mixed<K: Key, V: Value>(shards: usize, batches: &[Vec<(u8, u8, u64)>]) {
    let mut t = CpuTable::<K, V>::with_shards(1 << 10, shards).unwrap();
    let mut oracle: HashMap<K, V> = HashMap::new();
    let marker = V::from_bits(0x1234_5678_9abc_def0);
    for (b, batch) in batches.iter().enumerate() {
        let ops: Vec<MixedOp> = batch
            .iter()
            .map(|&(op, _, _)| [MixedOp::Insert, MixedOp::Find, MixedOp::Erase][op as usize % 3])
            .collect();
        let keys: Vec<K> = batch.iter().map(|&(_, k, _)| key_of(k)).collect();
        let values: Vec<V> = batch.iter().map(|&(_, _, v)| V::from_bits(v)).collect();
        let n = batch.len();
        let mut st = vec![InsertStatus(0xdead_beef); n];
        let mut out = vec![marker; n];
        let mut found = vec![true; n];
        let failed = t
            .mixed_batch(&ops, &keys, &values, &mut st, &mut out, &mut found)
            .unwrap();
        assert_eq!(failed, 0, "batch {b}");
        for i in 0..n {
            let (what, k) = (format!("batch {b} op {i} {:?}", ops[i]), keys[i]);
            match ops[i] {
                MixedOp::Insert => {
                    let expect = if oracle.contains_key(&k) { UPDATED } else { OK };
                    assert_eq!(st[i].0, expect, "{what}: status");
                    assert!(found[i] && out[i] == marker, "{what}: other outputs");
                    oracle.insert(k, values[i]);
                }
                MixedOp::Find => {
                    let expect = oracle.get(&k);
                    assert_eq!(found[i], expect.is_some(), "{what}: found");
                    assert_eq!(out[i], *expect.unwrap_or(&marker), "{what}: value");
                    assert_eq!(st[i].0, 0xdead_beef, "{what}: status written");
                }
                MixedOp::Erase => {
                    assert_eq!(found[i], oracle.remove(&k).is_some(), "{what}: erased");
                    assert_eq!(st[i].0, 0xdead_beef, "{what}: status written");
                    assert_eq!(out[i], marker, "{what}: out written");
                }
            }
        }
        assert_eq!(t.len().unwrap(), oracle.len(), "batch {b}: len");
    }
    check_state(&t, &oracle, KEY_SPACE, "after mixed batches");
}

#[derive(Clone, Debug)]
enum MultiOp {
    /// (key index, value) pairs (a small value space, so that equal pairs recur); `true`:
    /// through `insert_with_status`, else `insert`.
    Insert(Vec<(u8, u8)>, bool),
    EraseAll(Vec<u8>),
    FindAll(Vec<u8>),
    Count(Vec<u8>),
    Clear,
}

fn multi_op_strategy(key_space: u8, max_batch: usize) -> impl Strategy<Value = MultiOp> {
    let keys = move || prop::collection::vec(0..key_space, 0..max_batch);
    prop_oneof![
        5 => (prop::collection::vec((0..key_space, 0u8..4), 0..max_batch), any::<bool>())
            .prop_map(|(b, with_status)| MultiOp::Insert(b, with_status)),
        2 => keys().prop_map(MultiOp::EraseAll),
        2 => keys().prop_map(MultiOp::FindAll),
        1 => keys().prop_map(MultiOp::Count),
        1 => Just(MultiOp::Clear),
    ]
}

/// Whether `sub` is `full` with some elements left out (order kept).
fn is_subsequence<V: PartialEq>(sub: &[V], full: &[V]) -> bool {
    let mut rest = full.iter();
    sub.iter().all(|x| rest.any(|y| y == x))
}

fn run_multimap_ops<K: Key, V: Value>(capacity: usize, shards: usize, ops: &[MultiOp]) {
    let mut m = CpuMultiMap::<K, V>::with_shards(capacity, shards).unwrap();
    let mut oracle: HashMap<K, Vec<V>> = HashMap::new();
    let pairs = |o: &HashMap<K, Vec<V>>| o.values().map(Vec::len).sum::<usize>();
    for (n, op) in ops.iter().enumerate() {
        let what = format!("<{}, {}> op {n} {op:?}", K::NAME, V::NAME);
        match op {
            MultiOp::Insert(batch, with_status) => {
                let keys: Vec<K> = batch.iter().map(|&(i, _)| key_of(i)).collect();
                let values: Vec<V> = batch.iter().map(|&(_, v)| V::from_bits(v as u64)).collect();
                let room = capacity - pairs(&oracle);
                let refused = keys.len().saturating_sub(room);
                if *with_status {
                    let mut st = vec![InsertStatus(0xdead_beef); keys.len()];
                    let failed = m.insert_with_status(&keys, &values, &mut st).unwrap();
                    assert_eq!(failed, refused, "{what}: failures");
                    for (i, s) in st.iter().enumerate() {
                        match s.0 {
                            OK => oracle.entry(keys[i]).or_default().push(values[i]),
                            TABLE_FULL => {}
                            other => panic!("{what}: status {other:#x} at {i}"),
                        }
                    }
                } else {
                    match m.insert(&keys, &values) {
                        Ok(()) => assert_eq!(refused, 0, "{what}: Ok without room"),
                        Err(Error::TableFull {
                            failed,
                            batch,
                            capacity: c,
                        }) => {
                            assert_eq!(
                                (failed, batch, c),
                                (refused, keys.len(), capacity),
                                "{what}"
                            );
                        }
                        Err(e) => panic!("{what}: insert: {e}"),
                    }
                    // Which pairs won the last places is a race between shards: each key got
                    // a subsequence of its batch values, `room` pairs in all.
                    let distinct: Vec<K> = keys
                        .iter()
                        .copied()
                        .collect::<HashSet<K>>()
                        .into_iter()
                        .collect();
                    let (offsets, got) = m.find_all(&distinct).unwrap();
                    let mut placed = 0;
                    for (j, k) in distinct.iter().enumerate() {
                        let now = &got[offsets[j]..offsets[j + 1]];
                        let old = oracle.get(k).map_or(&[][..], Vec::as_slice);
                        assert!(now.starts_with(old), "{what}: {k:?} lost values");
                        let mine: Vec<V> = keys
                            .iter()
                            .zip(&values)
                            .filter(|(x, _)| *x == k)
                            .map(|(_, v)| *v)
                            .collect();
                        assert!(
                            is_subsequence(&now[old.len()..], &mine),
                            "{what}: {k:?} new values"
                        );
                        placed += now.len() - old.len();
                        oracle.insert(*k, now.to_vec());
                    }
                    assert_eq!(placed, keys.len() - refused, "{what}: placed");
                }
            }
            MultiOp::EraseAll(idx) => {
                let keys: Vec<K> = idx.iter().map(|&i| key_of(i)).collect();
                let distinct: HashSet<K> = keys.iter().copied().collect();
                let expect: usize = distinct
                    .iter()
                    .map(|k| oracle.remove(k).map_or(0, |v| v.len()))
                    .sum();
                assert_eq!(m.erase_all(&keys).unwrap(), expect, "{what}: erased");
            }
            MultiOp::FindAll(idx) => {
                let keys: Vec<K> = idx.iter().map(|&i| key_of(i)).collect();
                let (offsets, got) = m.find_all(&keys).unwrap();
                assert_eq!(offsets.len(), keys.len() + 1, "{what}: offsets");
                for (i, k) in keys.iter().enumerate() {
                    let want = oracle.get(k).map_or(&[][..], Vec::as_slice);
                    // Insertion order, exactly.
                    assert_eq!(&got[offsets[i]..offsets[i + 1]], want, "{what}: {k:?}");
                }
                assert_eq!(got.len(), offsets[keys.len()], "{what}: values");
            }
            MultiOp::Count(idx) => {
                let keys: Vec<K> = idx.iter().map(|&i| key_of(i)).collect();
                let expect: Vec<usize> = keys
                    .iter()
                    .map(|k| oracle.get(k).map_or(0, Vec::len))
                    .collect();
                assert_eq!(m.count(&keys).unwrap(), expect, "{what}");
            }
            MultiOp::Clear => {
                m.clear().unwrap();
                oracle.clear();
            }
        }
        assert_eq!(m.len().unwrap(), pairs(&oracle), "{what}: len");
        assert!(m.len().unwrap() <= capacity, "{what}: over capacity");
    }
    let (keys, values) = m.retrieve_all().unwrap();
    let mut got: HashMap<K, Vec<V>> = HashMap::new();
    for (k, v) in keys.into_iter().zip(values) {
        got.entry(k).or_default().push(v);
    }
    oracle.retain(|_, v| !v.is_empty());
    assert_eq!(
        got, oracle,
        "final retrieve_all (per key in insertion order)"
    );
}

fn shard_counts() -> impl Strategy<Value = usize> {
    select(vec![1usize, 2, 4, 64])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn ops_match_oracle_u32_u32(
        capacity in 1usize..32,
        shards in shard_counts(),
        ops in prop::collection::vec(op_strategy(KEY_SPACE, 40), 1..40),
    ) {
        run_ops::<u32, u32>(capacity, shards, KEY_SPACE, &ops);
    }

    #[test]
    fn ops_match_oracle_u64_u64(
        capacity in 1usize..32,
        shards in shard_counts(),
        ops in prop::collection::vec(op_strategy(KEY_SPACE, 40), 1..40),
    ) {
        run_ops::<u64, u64>(capacity, shards, KEY_SPACE, &ops);
    }

    #[test]
    fn ops_match_oracle_i32_u64(
        capacity in 1usize..32,
        shards in shard_counts(),
        ops in prop::collection::vec(op_strategy(KEY_SPACE, 40), 1..40),
    ) {
        run_ops::<i32, u64>(capacity, shards, KEY_SPACE, &ops);
    }

    #[test]
    fn ops_match_oracle_i64_u32(
        capacity in 1usize..32,
        shards in shard_counts(),
        ops in prop::collection::vec(op_strategy(KEY_SPACE, 40), 1..40),
    ) {
        run_ops::<i64, u32>(capacity, shards, KEY_SPACE, &ops);
    }

    #[test]
    fn ops_match_oracle_b32_u64(
        capacity in 1usize..32,
        shards in shard_counts(),
        ops in prop::collection::vec(op_strategy(KEY_SPACE, 40), 1..40),
    ) {
        run_ops::<[u8; 32], u64>(capacity, shards, KEY_SPACE, &ops);
    }

    /// Larger batches over a larger key space, inserts only (with an occasional erase): the
    /// capacity rule at every step.
    #[test]
    fn capacity_rule_u32_u32(
        capacity in 1usize..200,
        shards in shard_counts(),
        batches in prop::collection::vec(
            (prop::collection::vec((0u8..=255, any::<u64>()), 0..300), any::<bool>(),
             prop::collection::vec(0u8..=255, 0..20)),
            1..8,
        ),
    ) {
        let mut t = CpuTable::<u32, u32>::with_shards(capacity, shards).unwrap();
        let mut oracle = HashMap::new();
        for (n, (batch, with_status, erase)) in batches.iter().enumerate() {
            let what = format!("batch {n}");
            let keys: Vec<u32> = batch.iter().map(|&(i, _)| key_of(i)).collect();
            let values: Vec<u32> = batch.iter().map(|&(_, v)| v as u32).collect();
            insert_batch(&mut t, &mut oracle, &keys, &values, *with_status, &what);
            prop_assert!(t.len().unwrap() <= capacity);
            let gone: Vec<u32> = erase.iter().map(|&i| key_of(i)).collect();
            let present: HashSet<u32> = gone.iter().filter(|k| oracle.contains_key(k)).copied().collect();
            prop_assert_eq!(t.erase(&gone).unwrap(), present.len());
            for k in present {
                oracle.remove(&k);
            }
        }
        check_state(&t, &oracle, 255, "final state");
    }

    /// Several threads insert through `&self` at once: never more than `capacity` keys, exactly
    /// `min(distinct keys, capacity)` stored, every key reported placed is there with one of its
    /// values, and a key refused everywhere is absent.
    #[test]
    fn shared_writers_respect_capacity(
        capacity in 1usize..300,
        shards in shard_counts(),
        writers in prop::collection::vec(prop::collection::vec((0u8..=255, any::<u64>()), 0..200), 2..5),
    ) {
        let t = CpuTable::<u64, u64>::with_shards(capacity, shards).unwrap();
        let statuses: Vec<Vec<InsertStatus>> = std::thread::scope(|s| {
            let handles: Vec<_> = writers
                .iter()
                .map(|batch| {
                    let t = &t;
                    s.spawn(move || {
                        let keys: Vec<u64> = batch.iter().map(|&(i, _)| key_of(i)).collect();
                        let values: Vec<u64> = batch.iter().map(|&(_, v)| v).collect();
                        let mut st = vec![InsertStatus::default(); keys.len()];
                        t.insert_with_status_shared(&keys, &values, &mut st).unwrap();
                        st
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let mut candidates: HashMap<u64, Vec<u64>> = HashMap::new();
        let mut ok_keys = HashSet::new();
        for (batch, st) in writers.iter().zip(&statuses) {
            for (&(i, v), s) in batch.iter().zip(st) {
                let k: u64 = key_of(i);
                candidates.entry(k).or_default().push(v);
                prop_assert!(s.0 == OK || s.0 == UPDATED || s.0 == TABLE_FULL, "status {:?}", s);
                if s.is_ok() {
                    ok_keys.insert(k);
                }
            }
        }
        let (keys, values) = t.retrieve_all().unwrap();
        prop_assert_eq!(keys.len(), t.len().unwrap());
        prop_assert_eq!(keys.len(), candidates.len().min(capacity));
        prop_assert_eq!(keys.iter().copied().collect::<HashSet<u64>>(), ok_keys);
        for (k, v) in keys.iter().zip(&values) {
            prop_assert!(candidates[k].contains(v), "key {} holds a value never inserted", k);
        }
    }
    #[test]
    fn mixed_batches_replay_in_batch_order_u32_u32(
        shards in shard_counts(),
        batches in prop::collection::vec(
            prop::collection::vec((0u8..3, 0..KEY_SPACE, any::<u64>()), 0..60), 1..6),
    ) {
        run_mixed::<u32, u32>(shards, &batches);
    }

    #[test]
    fn mixed_batches_replay_in_batch_order_b32_u64(
        shards in shard_counts(),
        batches in prop::collection::vec(
            prop::collection::vec((0u8..3, 0..KEY_SPACE, any::<u64>()), 0..60), 1..6),
    ) {
        run_mixed::<[u8; 32], u64>(shards, &batches);
    }

    #[test]
    fn multimap_ops_match_oracle_u32_u32(
        capacity in 1usize..64,
        shards in shard_counts(),
        ops in prop::collection::vec(multi_op_strategy(KEY_SPACE, 40), 1..40),
    ) {
        run_multimap_ops::<u32, u32>(capacity, shards, &ops);
    }

    #[test]
    fn multimap_ops_match_oracle_i64_u64(
        capacity in 1usize..64,
        shards in shard_counts(),
        ops in prop::collection::vec(multi_op_strategy(KEY_SPACE, 40), 1..40),
    ) {
        run_multimap_ops::<i64, u64>(capacity, shards, &ops);
    }

    #[test]
    fn multimap_ops_match_oracle_b16_b32(
        capacity in 1usize..64,
        shards in shard_counts(),
        ops in prop::collection::vec(multi_op_strategy(KEY_SPACE, 40), 1..40),
    ) {
        run_multimap_ops::<[u8; 16], [u8; 32]>(capacity, shards, &ops);
    }
}
