//! WarpDrive's overflow filter (src/table/warpdrive.rs, "The overflow filter"): a search stops
//! at the first window its key never went past. A wrong filter loses present keys (a search
//! stops too early), so these tests churn tables at high load — inserts to load 0.97, erases,
//! reinserts into tombstones, rehash — and check every key against an oracle, with the filter on
//! and off (the paper's exact scheme), at several group sizes. GPU only (skipped without one,
//! unless `WARPMAP_REQUIRE_GPU=1`).

mod common;

use common::*;
use std::collections::HashMap;
use warpmap::table::warpdrive::OverflowFilter;
use warpmap::{HashTable, Key, Value, WarpDriveConfig};

fn churn_at_high_load<K: Key, V: Value>(g: u32, filter: OverflowFilter) {
    let Some(gpu) = gpu() else { return };
    const CAP: usize = 1 << 13;
    let name = format!("{}/{} g{g} filter {filter:?}", K::NAME, V::NAME);
    let config = WarpDriveConfig::new(CAP)
        .group_size(g)
        .overflow_filter(filter);
    let mut t = warpdrive::<K, V>(&gpu, config);
    if let OverflowFilter::Bits(b) = filter {
        assert_eq!(t.filter_bits(), b, "{name}: filter bits");
    }
    let cap = t.capacity();
    let mut rng = SplitMix64::new(mix(g as u64) ^ K::BYTES as u64 ^ (t.filter_bits() as u64) << 8);
    let pool = unique_keys::<K>(&mut rng, cap, true);
    let (resident, absent) = pool.split_at(cap * 97 / 100);
    let mut oracle: HashMap<K, V> = HashMap::new();
    for round in 0..6u64 {
        let what = format!("{name}, round {round}");
        // Fill up to load 0.97 (the first round) or back to it after the erases.
        let keys: Vec<K> = resident
            .iter()
            .copied()
            .filter(|k| !oracle.contains_key(k))
            .collect();
        let values: Vec<V> = keys.iter().map(|&k| value_for(k, round)).collect();
        t.insert(&keys, &values)
            .unwrap_or_else(|e| panic!("{what}: insert: {e}"));
        oracle.extend(keys.iter().copied().zip(values));
        assert_matches(&what, &t, &oracle);
        // Absent keys: never found, whatever the chains look like.
        let found = t.contains(absent).unwrap();
        assert!(found.iter().all(|&f| !f), "{what}: an absent key was found");
        // Erase a random third (and some absent keys), leaving tombstones on the chains.
        let mut gone: Vec<K> = resident
            .iter()
            .copied()
            .filter(|_| rng.chance(0.33))
            .collect();
        gone.extend(absent.iter().take(50));
        t.erase(&gone)
            .unwrap_or_else(|e| panic!("{what}: erase: {e}"));
        for k in &gone {
            oracle.remove(k);
        }
        assert_matches(&format!("{what}, after erase"), &t, &oracle);
        if round == 3 {
            // Rehash into a table of the same size: a fresh filter built by the reinserts.
            t.rehash(CAP)
                .unwrap_or_else(|e| panic!("{what}: rehash: {e}"));
            assert_matches(&format!("{what}, after rehash"), &t, &oracle);
        }
    }
}

fn filter_memory<K: Key, V: Value>() {
    let Some(gpu) = gpu() else { return };
    let with = |g: u32, f: OverflowFilter| {
        warpdrive::<K, V>(
            &gpu,
            WarpDriveConfig::new(10_000)
                .group_size(g)
                .overflow_filter(f),
        )
    };
    for g in [1, 4, 32] {
        let off = with(g, OverflowFilter::Off);
        assert_eq!(off.filter_bits(), 0);
        // A small table's filter fits in L2 at the most bits.
        assert_eq!(with(g, OverflowFilter::Auto).filter_bits(), 8);
        for bits in [1, 2, 4, 8] {
            let on = with(g, OverflowFilter::Bits(bits));
            assert_eq!(on.windows(), off.windows());
            // `bits` per window, stored as whole u32 words; off keeps a single word.
            let filter_bytes = (on.windows() as usize * bits as usize).div_ceil(32) * 4;
            assert_eq!(
                on.memory_bytes() - off.memory_bytes(),
                filter_bytes - 4,
                "g{g}, {bits} bits: memory_bytes must count the filter"
            );
        }
        let bad = WarpDriveConfig::new(100)
            .group_size(g)
            .overflow_filter(OverflowFilter::Bits(3));
        assert!(matches!(
            warpmap::WarpDrive::<K, V>::new(gpu.clone(), bad),
            Err(warpmap::Error::InvalidInput(_))
        ));
    }
}

macro_rules! filter_tests {
    ($($m:ident: $k:ty => $v:ty;)*) => {$(
        mod $m {
            use super::*;
            #[test]
            fn churn_g1_auto() { churn_at_high_load::<$k, $v>(1, OverflowFilter::Auto); }
            #[test]
            fn churn_g4_1bit() { churn_at_high_load::<$k, $v>(4, OverflowFilter::Bits(1)); }
            #[test]
            fn churn_g4_2bits() { churn_at_high_load::<$k, $v>(4, OverflowFilter::Bits(2)); }
            #[test]
            fn churn_g8_4bits() { churn_at_high_load::<$k, $v>(8, OverflowFilter::Bits(4)); }
            #[test]
            fn churn_g32_8bits() { churn_at_high_load::<$k, $v>(32, OverflowFilter::Bits(8)); }
            #[test]
            fn churn_g4_without_filter() { churn_at_high_load::<$k, $v>(4, OverflowFilter::Off); }
            #[test]
            fn memory() { filter_memory::<$k, $v>(); }
        }
    )*};
}

filter_tests! {
    u32_u32: u32 => u32;
    u64_u64: u64 => u64;
    u32_u64: u32 => u64;
    b32_u64: [u8; 32] => u64;
    u128_b16: u128 => [u8; 16];
}
