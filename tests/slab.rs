//! Slab-hash-specific behaviour on the GPU (the shared contracts run in `tests/contract.rs` and
//! `tests/multimap.rs` on the `slab/*` backends too): the pool growing past its first super
//! blocks, a memory budget exhausted in the middle of a batch, FLUSH between batches of inserts
//! and erases, mixed batches racing on a few keys across FLUSHes, SlabAlloc on its own, and
//! invalid configurations. Without a GPU every case is skipped (`WARPMAP_REQUIRE_GPU=1` makes a
//! missing GPU fail).

mod common;

use common::*;
use std::collections::HashMap;
use warpmap::status::TABLE_FULL;
use warpmap::table::slab::PAIRS_PER_SLAB;
use warpmap::{
    DeviceHashTable, Error, HashTable, InsertStatus, Key, MixedOp, MultiMap, Slab, SlabConfig,
    SlabMultiMap, Value,
};

fn slab<K: Key, V: Value>(gpu: &std::sync::Arc<warpmap::Gpu>, config: SlabConfig) -> Slab<K, V> {
    let what = format!("Slab<{}, {}> {config:?}", K::NAME, V::NAME);
    Slab::new(gpu.clone(), config).unwrap_or_else(|e| panic!("creating {what}: {e}"))
}

/// A table of 3 buckets and super blocks of 1024 slabs takes 200k keys: its pool grows to
/// ~13 super blocks, every key is there, and the stats add up.
fn growth<K: Key, V: Value>() {
    let Some(gpu) = gpu() else { return };
    let mut t = slab::<K, V>(&gpu, SlabConfig::new(100).buckets(3).memory_blocks(1));
    let first = t.stats().unwrap();
    assert_eq!(first.super_blocks, 1);
    let mut rng = SplitMix64::new(11);
    let keys = unique_keys::<K>(&mut rng, 200_000, true);
    let mut oracle = HashMap::new();
    for (r, part) in keys.chunks(50_000).enumerate() {
        let values: Vec<V> = part.iter().map(|&k| value_for(k, r as u64)).collect();
        t.insert(part, &values)
            .unwrap_or_else(|e| panic!("batch {r}: {e}"));
        oracle.extend(part.iter().copied().zip(values));
    }
    let s = t.stats().unwrap();
    assert!(
        s.super_blocks > 10,
        "grew to {} super blocks",
        s.super_blocks
    );
    assert_eq!(s.pairs, keys.len());
    assert!(
        s.allocated_slabs * PAIRS_PER_SLAB >= keys.len() - 3 * PAIRS_PER_SLAB,
        "{} slabs hold {} keys",
        s.allocated_slabs,
        keys.len()
    );
    assert!(s.allocated_slabs <= s.pool_slabs);
    assert!(t.capacity() >= keys.len());
    assert_matches("slab growth", &t, &oracle);
}

/// A budget of 4 super blocks (one memory block each) runs out in the middle of a batch: the
/// keys left out get TABLE_FULL, `insert` says `TableFull`, every key that went in is there and
/// no other; erasing and FLUSH make room again.
fn budget_exhausted<K: Key, V: Value>() {
    let Some(gpu) = gpu() else { return };
    let slab_bytes = if K::BYTES == 4 && V::BYTES == 4 {
        128
    } else {
        256
    };
    let super_block = 1024 * slab_bytes + 128;
    let budget = 4 * super_block + 4096;
    let config = SlabConfig::new(100)
        .buckets(5)
        .memory_blocks(1)
        .super_blocks(1)
        .memory_budget(budget);
    let mut t = slab::<K, V>(&gpu, config);
    let mut rng = SplitMix64::new(12);
    let n = 4 * 1024 * PAIRS_PER_SLAB + 20_000; // more than 4 super blocks hold
    let keys = unique_keys::<K>(&mut rng, n + 100, false);
    let (keys, fresh) = keys.split_at(n);
    let values: Vec<V> = keys.iter().map(|&k| value_for(k, 0)).collect();
    let mut st = vec![InsertStatus(0xdead_beef); n];
    let capacity = t.capacity(); // the base slabs and 4 super blocks, once grown
    let failed = t.insert_with_status(keys, &values, &mut st).unwrap();
    assert!(
        failed >= n - (5 + 4 * 1024) * PAIRS_PER_SLAB,
        "only {failed} keys refused"
    );
    assert!(t.capacity() > capacity && t.capacity() == (5 + 4 * 1024) * PAIRS_PER_SLAB);
    assert_eq!(failed, st.iter().filter(|s| s.is_failure()).count());
    let mut oracle = HashMap::new();
    let mut lost = Vec::new();
    for ((k, v), s) in keys.iter().zip(&values).zip(&st) {
        if s.is_ok() {
            oracle.insert(*k, *v);
        } else {
            assert_eq!(s.0, TABLE_FULL, "failure status {s:?}");
            lost.push(*k);
        }
    }
    let stats = t.stats().unwrap();
    assert_eq!(stats.super_blocks, 4, "the budget holds 4 super blocks");
    assert_eq!(stats.pairs, oracle.len());
    assert_matches("slab at its budget", &t, &oracle);
    assert!(t.contains(&lost).unwrap().iter().all(|c| !c));
    match t.insert(&fresh[..10], &values[..10]) {
        Err(Error::TableFull { failed, batch, .. }) => assert_eq!((failed, batch), (10, 10)),
        other => panic!("insert beyond the budget gave {other:?}"),
    }
    // Erase a third, FLUSH: the freed slabs take new keys.
    let gone: Vec<K> = oracle.keys().copied().step_by(3).collect();
    assert_eq!(t.erase(&gone).unwrap(), gone.len());
    for k in &gone {
        oracle.remove(k);
    }
    t.flush().unwrap();
    let after = t.stats().unwrap();
    assert!(
        after.allocated_slabs < stats.allocated_slabs,
        "FLUSH freed nothing: {} -> {}",
        stats.allocated_slabs,
        after.allocated_slabs
    );
    let again = &lost[..gone.len() / 2];
    let again_values: Vec<V> = again.iter().map(|&k| value_for(k, 1)).collect();
    t.insert(again, &again_values)
        .unwrap_or_else(|e| panic!("inserts after FLUSH: {e}"));
    oracle.extend(again.iter().copied().zip(again_values));
    assert_matches("slab refilled after FLUSH", &t, &oracle);
}

/// Rounds of inserts, updates and erases with a FLUSH between them, on long lists: the contents
/// match the oracle after each round, and FLUSH gives slabs back.
fn flush_between_batches<K: Key, V: Value>() {
    let Some(gpu) = gpu() else { return };
    let mut t = slab::<K, V>(&gpu, SlabConfig::new(1 << 14).buckets(61).memory_blocks(1));
    let mut rng = SplitMix64::new(13);
    let pool = unique_keys::<K>(&mut rng, 30_000, true);
    let mut oracle: HashMap<K, V> = HashMap::new();
    for round in 0..8u64 {
        let n = 8_000 + rng.index(8_000);
        let batch: Vec<K> = (0..n).map(|_| pool[rng.index(pool.len())]).collect();
        let values: Vec<V> = batch.iter().map(|&k| value_for(k, round)).collect();
        t.insert(&batch, &values).unwrap();
        // Within a batch the last value of a repeated key is not promised: take the table's.
        let found = t.find(&batch).unwrap();
        for (k, f) in batch.iter().zip(found) {
            let v = f.unwrap_or_else(|| panic!("round {round}: {k:?} missing"));
            oracle.insert(*k, v);
        }
        let erase: Vec<K> = (0..n / 2).map(|_| pool[rng.index(pool.len())]).collect();
        let mut distinct = erase.clone();
        distinct.sort_by_key(|k| bytemuck::bytes_of(k).to_vec());
        distinct.dedup();
        let present = distinct.iter().filter(|k| oracle.contains_key(k)).count();
        assert_eq!(t.erase(&erase).unwrap(), present, "round {round}: erased");
        for k in &erase {
            oracle.remove(k);
        }
        let before = t.stats().unwrap();
        t.flush().unwrap();
        let after = t.stats().unwrap();
        assert!(after.allocated_slabs <= before.allocated_slabs);
        let needed = oracle.len().div_ceil(PAIRS_PER_SLAB);
        assert!(
            after.allocated_slabs <= needed,
            "round {round}: {} slabs after FLUSH for {} keys",
            after.allocated_slabs,
            oracle.len()
        );
        assert_matches(&format!("slab round {round} after FLUSH"), &t, &oracle);
    }
}

/// Mixed batches in which inserts, finds and erases of 64 keys race, with a FLUSH after each:
/// every find returns absent or a value some operation of the batch or the table before it
/// gave the key; each erase that reports success erased a present copy; and afterwards the
/// table holds each key at most once (checked through retrieve_all) and len() agrees.
fn mixed_races<K: Key, V: Value>() {
    let Some(gpu) = gpu() else { return };
    let mut t = slab::<K, V>(&gpu, SlabConfig::new(1 << 12).buckets(5).memory_blocks(1));
    let mut rng = SplitMix64::new(14);
    let keys = unique_keys::<K>(&mut rng, 64, true);
    for round in 0..6u64 {
        let n = 20_000;
        let ops: Vec<MixedOp> = (0..n)
            .map(|_| match rng.below(3) {
                0 => MixedOp::Insert,
                1 => MixedOp::Find,
                _ => MixedOp::Erase,
            })
            .collect();
        let ks: Vec<K> = (0..n).map(|_| keys[rng.index(keys.len())]).collect();
        let vs: Vec<V> = (0..n)
            .map(|i| V::from_bits((round << 32) | i as u64))
            .collect();
        let before = contents("slab mixed", &t);
        let mut st = vec![InsertStatus::default(); n];
        let mut out = vec![V::from_bits(0); n];
        let mut found = vec![false; n];
        let failed = t
            .mixed_batch(&ops, &ks, &vs, &mut st, &mut out, &mut found)
            .unwrap();
        assert_eq!(failed, 0, "round {round}");
        let mut given: HashMap<K, Vec<V>> = HashMap::new();
        for i in 0..n {
            if ops[i] == MixedOp::Insert {
                given.entry(ks[i]).or_default().push(vs[i]);
            }
        }
        for i in 0..n {
            if ops[i] == MixedOp::Find && found[i] {
                let ok = before.get(&ks[i]) == Some(&out[i])
                    || given.get(&ks[i]).is_some_and(|g| g.contains(&out[i]));
                assert!(
                    ok,
                    "round {round}: find {i} of {:?} read {:?}",
                    ks[i], out[i]
                );
            }
        }
        let after = contents("slab mixed after", &t); // panics on a key retrieved twice
        assert_eq!(t.len().unwrap(), after.len(), "round {round}: len");
        for (k, v) in &after {
            let ok = before.get(k) == Some(v) || given.get(k).is_some_and(|g| g.contains(v));
            assert!(ok, "round {round}: {k:?} holds {v:?}");
        }
        t.flush().unwrap();
        assert_eq!(
            contents("slab mixed flushed", &t),
            after,
            "round {round}: FLUSH"
        );
    }
}

/// SlabAlloc alone: 3 super blocks of one memory block hand out 3072 distinct slabs, then the
/// rest of a request gets "none" (all ones); freed slabs are handed out again.
#[test]
fn slab_alloc_distinct_and_exhausted() {
    let Some(gpu) = gpu() else { return };
    let config = SlabConfig::new(10)
        .buckets(1)
        .memory_blocks(1)
        .super_blocks(3)
        .memory_budget(3 * (1024 * 128 + 128) + 4096);
    let mut t = slab::<u32, u32>(&gpu, config);
    let mut out = gpu.alloc::<u32>(4000).unwrap();
    t.allocate_slabs_async(&mut out).unwrap();
    let got = gpu.download(&out).unwrap();
    let mut addrs: Vec<u32> = got.iter().copied().filter(|&a| a != u32::MAX).collect();
    assert_eq!(
        addrs.len(),
        3 * 1024,
        "every slab of 3 super blocks, no more"
    );
    addrs.sort_unstable();
    addrs.dedup();
    assert_eq!(addrs.len(), 3 * 1024, "distinct addresses");
    assert!(addrs.iter().all(|a| a >> 24 < 3 && (a >> 10) & 0x3fff == 0));
    assert_eq!(t.stats().unwrap().allocated_slabs, 3 * 1024);
    t.free_slabs_async(&out).unwrap();
    assert_eq!(t.stats().unwrap().allocated_slabs, 0);
    let mut again = gpu.alloc::<u32>(3 * 1024).unwrap();
    t.allocate_slabs_async(&mut again).unwrap();
    assert!(gpu.download(&again).unwrap().iter().all(|&a| a != u32::MAX));
}

/// The multimap keeps duplicates through growth and FLUSH: 40 keys × 500 values each on 3
/// buckets, DELETEALL of half the keys, FLUSH, then find_all of every key.
#[test]
fn multimap_flush_and_growth() {
    let Some(gpu) = gpu() else { return };
    let mut m = SlabMultiMap::<u64, u32>::new(
        gpu.clone(),
        SlabConfig::new(100).buckets(3).memory_blocks(1),
    )
    .unwrap();
    let mut rng = SplitMix64::new(15);
    let keys = unique_keys::<u64>(&mut rng, 40, true);
    let batch: Vec<u64> = (0..20_000).map(|i| keys[i % 40]).collect();
    let values: Vec<u32> = (0..20_000).collect();
    m.insert(&batch, &values).unwrap();
    assert_eq!(m.len().unwrap(), 20_000);
    assert_eq!(m.erase_all(&keys[..20]).unwrap(), 10_000);
    let before = m.stats().unwrap();
    m.flush().unwrap();
    let after = m.stats().unwrap();
    assert!(after.allocated_slabs < before.allocated_slabs);
    let (offsets, found) = m.find_all(&keys).unwrap();
    for (i, k) in keys.iter().enumerate() {
        let mut got = found[offsets[i]..offsets[i + 1]].to_vec();
        got.sort_unstable();
        let want: Vec<u32> = if i < 20 {
            Vec::new()
        } else {
            (0..20_000u32).filter(|v| *v as usize % 40 == i).collect()
        };
        assert_eq!(got, want, "find_all({k})");
    }
}

/// Bad configurations are errors, not panics.
#[test]
fn invalid_configs() {
    let Some(gpu) = gpu() else { return };
    let bad = [
        SlabConfig::new(10).memory_blocks(0),
        SlabConfig::new(10).memory_blocks(1 << 15),
        SlabConfig::new(10).max_probes(0),
        SlabConfig::new(10).memory_blocks(1).memory_budget(1000),
    ];
    for c in bad {
        match Slab::<u32, u32>::new(gpu.clone(), c.clone()) {
            Err(Error::InvalidInput(_)) => {}
            other => panic!("{c:?}: {:?}", other.map(|_| ())),
        }
    }
    match Slab::<u128, u32>::new(gpu.clone(), SlabConfig::new(10)) {
        Err(Error::Unsupported(_)) => {}
        other => panic!("u128 keys: {:?}", other.map(|_| ())),
    }
    // The device path reports keys it could not place at synchronize.
    let mut t = slab::<u32, u32>(
        &gpu,
        SlabConfig::new(10)
            .buckets(1)
            .memory_blocks(1)
            .super_blocks(1)
            .memory_budget(1024 * 128 + 128 + 4096),
    );
    let keys: Vec<u32> = (0..20_000).collect();
    let dk = gpu.upload(&keys).unwrap();
    let dv = gpu.upload(&keys).unwrap();
    t.insert_device_async(&dk, &dv, None).unwrap();
    match t.synchronize() {
        Err(Error::TableFull {
            failed, batch: 0, ..
        }) => assert!(failed > 0),
        other => panic!("device inserts beyond the budget: {other:?}"),
    }
}

macro_rules! typed {
    ($($name:ident: $k:ty, $v:ty;)*) => {$(
        mod $name {
            #[test]
            fn growth() {
                super::growth::<$k, $v>();
            }
            #[test]
            fn budget_exhausted() {
                super::budget_exhausted::<$k, $v>();
            }
            #[test]
            fn flush_between_batches() {
                super::flush_between_batches::<$k, $v>();
            }
            #[test]
            fn mixed_races() {
                super::mixed_races::<$k, $v>();
            }
        }
    )*};
}

typed! {
    u32_u32: u32, u32;
    u64_u64: u64, u64;
    u32_u64: u32, u64;
}
