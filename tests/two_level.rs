//! Two-level-cuckoo-specific behaviour, on the CPU twin ([`TwoLevelCpu`]) always and on the GPU
//! table ([`TwoLevel`]) when a GPU is present (the shared contracts run in `tests/contract.rs`
//! on `two_level/*` and `two_level_cpu/*`): bucket rebuilds with new seeds forced by tiny
//! buckets, splits and coalesces, batches into an existing table, sentinel keys and duplicates
//! in one batch, erase then reinsert, and invalid configurations; every step against a
//! `HashMap` oracle. Without a GPU the GPU cases are skipped (`WARPMAP_REQUIRE_GPU=1` makes a
//! missing GPU fail).

mod common;

use common::*;
use std::collections::HashMap;
use warpmap::status::{SENTINEL_KEY, UPDATED};
use warpmap::table::two_level::{TwoLevelConfig, TwoLevelStats};
use warpmap::{Error, HashTable, Key, TwoLevel, TwoLevelCpu, Value};

/// Either backend, with the scheme-only accessors.
enum Table<K: Key, V: Value> {
    Cpu(TwoLevelCpu<K, V>),
    Gpu(Box<TwoLevel<K, V>>),
}

impl<K: Key, V: Value> Table<K, V> {
    fn t(&mut self) -> &mut dyn HashTable<K, V> {
        match self {
            Table::Cpu(t) => t,
            Table::Gpu(t) => t.as_mut(),
        }
    }
    fn r(&self) -> &dyn HashTable<K, V> {
        match self {
            Table::Cpu(t) => t,
            Table::Gpu(t) => t.as_ref(),
        }
    }
    fn stats(&self) -> TwoLevelStats {
        match self {
            Table::Cpu(t) => t.stats(),
            Table::Gpu(t) => t.stats().unwrap(),
        }
    }
    fn buckets(&self) -> u32 {
        match self {
            Table::Cpu(t) => t.buckets(),
            Table::Gpu(t) => t.buckets(),
        }
    }
    fn bucket_counts(&self) -> Vec<u32> {
        match self {
            Table::Cpu(t) => t.bucket_counts(),
            Table::Gpu(t) => t.bucket_counts().unwrap(),
        }
    }
}

/// The CPU twin and, on a GPU, the GPU table, both made with `config`.
fn tables<K: Key, V: Value>(config: TwoLevelConfig) -> Vec<(String, Table<K, V>)> {
    let mut v = vec![(
        format!("two_level_cpu <{}, {}>", K::NAME, V::NAME),
        Table::Cpu(TwoLevelCpu::new(config.clone()).expect("TwoLevelCpu::new")),
    )];
    if let Some(gpu) = gpu() {
        let t = TwoLevel::new(gpu, config).unwrap_or_else(|e| panic!("TwoLevel::new: {e}"));
        v.push((
            format!("two_level <{}, {}>", K::NAME, V::NAME),
            Table::Gpu(Box::new(t)),
        ));
    }
    v
}

/// Every bucket's count adds up to the stored keys that are not on the side path.
fn check_counts<K: Key, V: Value>(name: &str, t: &Table<K, V>, oracle: &HashMap<K, V>) {
    let specials = sentinel_keys::<K>();
    let off_side = oracle.keys().filter(|k| !specials.contains(k)).count();
    let counts = t.bucket_counts();
    assert_eq!(counts.len(), t.buckets() as usize, "{name}");
    assert_eq!(
        counts.iter().map(|&c| c as usize).sum::<usize>(),
        off_side,
        "{name}: bucket counts"
    );
}

/// Buckets of 3 × 32 slots and one round per attempt (only the first free slots of the keys'
/// first cells): a bucket whose first choices crowd a cell fails and starts over with a new seed
/// (counted); splits to a regular load of 0.3 make the attempts succeed; every key is stored.
fn forced_rebuilds<K: Key, V: Value>() {
    let config = TwoLevelConfig::new(4000)
        .slots_per_subtable(32)
        .reg_load(0.3)
        .max_probes(1)
        .max_rebuilds(16);
    for (name, mut t) in tables::<K, V>(config) {
        let mut rng = SplitMix64::new(21);
        let keys = unique_keys::<K>(&mut rng, 3000, true);
        let mut oracle = HashMap::new();
        for (r, part) in keys.chunks(500).enumerate() {
            let values: Vec<V> = part.iter().map(|&k| value_for(k, r as u64)).collect();
            let mut st = vec![Default::default(); part.len()];
            let failed = t.t().insert_with_status(part, &values, &mut st).unwrap();
            assert_eq!(failed, 0, "{name}: batch {r}");
            assert_insert_statuses(&name, t.r(), part, &st, &oracle);
            oracle.extend(part.iter().copied().zip(values));
        }
        assert_matches(&name, t.r(), &oracle);
        check_counts(&name, &t, &oracle);
        let s = t.stats();
        assert!(
            s.rebuilds > 0,
            "{name}: no rebuild with 1 round per attempt: {s:?}"
        );
    }
}

/// A table made for 1000 slots (one bucket) takes 30000 keys by splitting its buckets, then
/// coalesces back to one bucket when nearly all are erased; the survivors stay, and keys
/// erased can be inserted again.
fn splits_and_coalesces<K: Key, V: Value>() {
    for (name, mut t) in tables::<K, V>(TwoLevelConfig::new(1000)) {
        assert_eq!(t.buckets(), 1, "{name}");
        let mut rng = SplitMix64::new(22);
        let keys = unique_keys::<K>(&mut rng, 30_000, true);
        let mut oracle = HashMap::new();
        for (r, part) in keys.chunks(7000).enumerate() {
            let values: Vec<V> = part.iter().map(|&k| value_for(k, r as u64)).collect();
            t.t()
                .insert(part, &values)
                .unwrap_or_else(|e| panic!("{name}: batch {r}: {e}"));
            oracle.extend(part.iter().copied().zip(values));
        }
        let grown = t.buckets();
        assert!(grown >= 20, "{name}: {grown} buckets for 30000 keys");
        assert!(t.stats().splits > 0, "{name}: {:?}", t.stats());
        let load = t.r().load_factor().unwrap();
        assert!(
            load > 0.3 && load <= 0.9,
            "{name}: load {load} after splits"
        );
        assert_matches(&format!("{name} grown"), t.r(), &oracle);
        check_counts(&name, &t, &oracle);

        let (gone, kept) = keys.split_at(29_500);
        assert_eq!(t.t().erase(gone).unwrap(), gone.len(), "{name}: erase");
        for k in gone {
            oracle.remove(k);
        }
        assert!(t.stats().coalesces > 0, "{name}: {:?}", t.stats());
        assert_eq!(
            t.buckets(),
            1,
            "{name}: coalesced back to the capacity asked for"
        );
        assert_matches(&format!("{name} coalesced"), t.r(), &oracle);
        check_counts(&name, &t, &oracle);
        assert_eq!(kept.len(), oracle.len(), "{name}");

        let again = &gone[..2000];
        let values: Vec<V> = again.iter().map(|&k| value_for(k, 9)).collect();
        t.t().insert(again, &values).unwrap();
        oracle.extend(again.iter().copied().zip(values));
        assert_matches(&format!("{name} reinserted"), t.r(), &oracle);
    }
}

/// Many small batches into one table (each rebuilds only the buckets it touches): new keys,
/// updates of present keys, insert-if-absent, erases, all checked after every batch.
fn batches_into_existing<K: Key, V: Value>() {
    for (name, mut t) in tables::<K, V>(TwoLevelConfig::new(20_000)) {
        let mut rng = SplitMix64::new(23);
        let pool = unique_keys::<K>(&mut rng, 12_000, true);
        let mut oracle: HashMap<K, V> = HashMap::new();
        for round in 0..12u64 {
            let batch: Vec<K> = (0..400).map(|_| pool[rng.index(pool.len())]).collect();
            let values: Vec<V> = batch.iter().map(|&k| value_for(k, round)).collect();
            if round % 3 == 2 {
                t.t().insert_if_absent(&batch, &values).unwrap();
                for (k, v) in batch.iter().zip(&values) {
                    oracle.entry(*k).or_insert(*v);
                }
            } else {
                t.t().insert(&batch, &values).unwrap();
                oracle.extend(batch.iter().copied().zip(values));
            }
            if round % 4 == 3 {
                let gone: Vec<K> = oracle.keys().copied().take(100).collect();
                assert_eq!(t.t().erase(&gone).unwrap(), 100, "{name}: round {round}");
                for k in &gone {
                    oracle.remove(k);
                }
            }
            assert_matches(&format!("{name} round {round}"), t.r(), &oracle);
        }
        check_counts(&name, &t, &oracle);
    }
}

/// One batch holding every key three times, sentinel keys among them: each key is stored
/// once, reported new exactly once and updated otherwise; sentinel keys say SENTINEL_KEY.
fn duplicates_and_sentinels<K: Key, V: Value>() {
    for (name, mut t) in tables::<K, V>(TwoLevelConfig::new(5000)) {
        let mut rng = SplitMix64::new(24);
        let keys = unique_keys::<K>(&mut rng, 1500, true);
        let batch: Vec<K> = keys.iter().chain(&keys).chain(&keys).copied().collect();
        let values: Vec<V> = batch.iter().map(|&k| value_for(k, 0)).collect();
        let mut st = vec![Default::default(); batch.len()];
        assert_eq!(
            t.t().insert_with_status(&batch, &values, &mut st).unwrap(),
            0,
            "{name}"
        );
        assert_insert_statuses(&name, t.r(), &batch, &st, &HashMap::new());
        let specials = sentinel_keys::<K>();
        for (k, s) in batch.iter().zip(&st) {
            assert_eq!(
                s.0 & SENTINEL_KEY != 0,
                specials.contains(k),
                "{name}: {k:?} {s:?}"
            );
        }
        let oracle: HashMap<K, V> = keys.iter().map(|&k| (k, value_for(k, 0))).collect();
        assert_matches(&name, t.r(), &oracle);
        // The same batch again: every occurrence is an update.
        let mut st = vec![Default::default(); batch.len()];
        t.t().insert_with_status(&batch, &values, &mut st).unwrap();
        assert!(st.iter().all(|s| s.0 & UPDATED != 0), "{name}");
        assert_eq!(t.r().len().unwrap(), keys.len(), "{name}");
    }
}

/// Erase every other key (sentinels included), then insert them again with new values.
fn erase_then_reinsert<K: Key, V: Value>() {
    for (name, mut t) in tables::<K, V>(TwoLevelConfig::new(8000)) {
        let mut rng = SplitMix64::new(25);
        let keys = unique_keys::<K>(&mut rng, 5000, true);
        let values: Vec<V> = keys.iter().map(|&k| value_for(k, 0)).collect();
        t.t().insert(&keys, &values).unwrap();
        let mut oracle: HashMap<K, V> = keys.iter().copied().zip(values).collect();
        let half: Vec<K> = keys.iter().copied().step_by(2).collect();
        assert_eq!(t.t().erase(&half).unwrap(), half.len(), "{name}");
        assert_eq!(t.t().erase(&half).unwrap(), 0, "{name}: erased twice");
        for k in &half {
            oracle.remove(k);
        }
        assert_matches(&format!("{name} erased"), t.r(), &oracle);
        let values: Vec<V> = half.iter().map(|&k| value_for(k, 1)).collect();
        let mut st = vec![Default::default(); half.len()];
        assert_eq!(
            t.t().insert_with_status(&half, &values, &mut st).unwrap(),
            0
        );
        assert!(
            st.iter().all(|s| s.0 & UPDATED == 0),
            "{name}: reinserted keys are new"
        );
        oracle.extend(half.iter().copied().zip(values));
        assert_matches(&format!("{name} reinserted"), t.r(), &oracle);
        check_counts(&name, &t, &oracle);
    }
}

/// A table made for n / 0.95 slots takes n keys without splitting: buckets whose share of the
/// keys exceeds their slots, and what their layouts leave, go to the stash; every key is found
/// (stashed ones too), misses are not, erase and reinsert work on stashed keys, and an update
/// of a stashed key stays an update.
fn holds_load_095<K: Key, V: Value>() {
    let n = 1 << 17;
    let config = TwoLevelConfig::new((n as f64 / 0.95) as usize);
    for (name, mut t) in tables::<K, V>(config.clone()) {
        let mut rng = SplitMix64::new(26);
        let keys = unique_keys::<K>(&mut rng, n, true);
        let values: Vec<V> = keys.iter().map(|&k| value_for(k, 0)).collect();
        let mut st = vec![Default::default(); n];
        let failed = t.t().insert_with_status(&keys, &values, &mut st).unwrap();
        assert_eq!(failed, 0, "{name}");
        let mut oracle: HashMap<K, V> = keys.iter().copied().zip(values).collect();
        assert_insert_statuses(&name, t.r(), &keys, &st, &HashMap::new());
        let s = t.stats();
        assert_eq!(s.splits, 0, "{name}: split at load 0.95: {s:?}");
        let load = t.r().load_factor().unwrap();
        assert!(load > 0.94, "{name}: load {load}");
        // Keys beyond a bucket's slots must be in the stash (8-byte slots take fewer extra
        // items, but none of these buckets needs more than they take).
        let slots = config.bucket_slots();
        let beyond: u64 = t
            .bucket_counts()
            .iter()
            .map(|&c| c.saturating_sub(slots) as u64)
            .sum();
        assert!(
            s.stashed >= beyond,
            "{name}: {s:?}, {beyond} keys beyond the slots"
        );
        assert!(s.stashed > 0, "{name}: nothing stashed at load 0.95: {s:?}");
        eprintln!("{name}: {s:?}, {beyond} keys beyond the slots");
        assert_matches(&name, t.r(), &oracle);
        check_counts(&name, &t, &oracle);

        // Updates (stashed keys among them) stay updates; erase a third, then reinsert.
        let mut st = vec![Default::default(); n];
        let again: Vec<V> = keys.iter().map(|&k| value_for(k, 1)).collect();
        t.t().insert_with_status(&keys, &again, &mut st).unwrap();
        assert!(st.iter().all(|s| s.0 & UPDATED != 0), "{name}: updates");
        oracle.extend(keys.iter().copied().zip(again));
        let gone: Vec<K> = keys.iter().copied().step_by(3).collect();
        assert_eq!(t.t().erase(&gone).unwrap(), gone.len(), "{name}: erase");
        for k in &gone {
            oracle.remove(k);
        }
        assert_matches(&format!("{name} erased"), t.r(), &oracle);
        check_counts(&name, &t, &oracle);
        let back: Vec<V> = gone.iter().map(|&k| value_for(k, 2)).collect();
        let mut st = vec![Default::default(); gone.len()];
        assert_eq!(t.t().insert_with_status(&gone, &back, &mut st).unwrap(), 0);
        assert!(
            st.iter().all(|s| s.0 & UPDATED == 0),
            "{name}: reinserted keys are new"
        );
        oracle.extend(gone.iter().copied().zip(back));
        assert_matches(&format!("{name} reinserted"), t.r(), &oracle);
        check_counts(&name, &t, &oracle);
    }
}

/// Bad parameters are errors, never panics, on both backends.
fn invalid_configs<K: Key, V: Value>() {
    let bad = [
        TwoLevelConfig::new(0),
        TwoLevelConfig::new(100).hash_functions(7),
        TwoLevelConfig::new(100).slots_per_subtable(4096),
        TwoLevelConfig::new(100).reg_load(1.5),
        TwoLevelConfig::new(100).max_probes(0),
    ];
    let gpu = gpu();
    for c in bad {
        let e = TwoLevelCpu::<K, V>::new(c.clone()).err();
        assert!(
            matches!(e, Some(Error::InvalidInput(_))),
            "cpu {c:?}: {e:?}"
        );
        if let Some(g) = &gpu {
            let e = TwoLevel::<K, V>::new(g.clone(), c.clone()).err();
            assert!(
                matches!(e, Some(Error::InvalidInput(_))),
                "gpu {c:?}: {e:?}"
            );
        }
    }
    let wide = TwoLevelCpu::<u128, u32>::new(TwoLevelConfig::new(100)).err();
    assert!(matches!(wide, Some(Error::Unsupported(_))), "{wide:?}");
}

macro_rules! for_types {
    ($($m:ident: $k:ty => $v:ty;)*) => {$(
        mod $m {
            #[test]
            fn forced_rebuilds() {
                super::forced_rebuilds::<$k, $v>();
            }
            #[test]
            fn splits_and_coalesces() {
                super::splits_and_coalesces::<$k, $v>();
            }
            #[test]
            fn holds_load_095() {
                super::holds_load_095::<$k, $v>();
            }
            #[test]
            fn batches_into_existing() {
                super::batches_into_existing::<$k, $v>();
            }
            #[test]
            fn duplicates_and_sentinels() {
                super::duplicates_and_sentinels::<$k, $v>();
            }
            #[test]
            fn erase_then_reinsert() {
                super::erase_then_reinsert::<$k, $v>();
            }
            #[test]
            fn invalid_configs() {
                super::invalid_configs::<$k, $v>();
            }
        }
    )*};
}

for_types! {
    u32_u32: u32 => u32;
    u64_u64: u64 => u64;
    u32_u64: u32 => u64;
}
