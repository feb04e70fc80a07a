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

mod common;

use common::{mix, sentinel_keys, with_last_byte};
use proptest::prelude::*;
use proptest::sample::select;
use std::collections::{HashMap, HashSet};
use warpmap::status::{OK, TABLE_FULL, UPDATED};
use warpmap::{CpuTable, Error, HashTable, InsertStatus, Key, Value};

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
}
