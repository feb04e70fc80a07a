//! Stadium-specific behaviour on the GPU (the shared contract runs in `tests/contract.rs` on the
//! `stadium/*` backends too): every ticket size × bucket location at high load with erase churn,
//! wide keys and values, a table at load 1.0, absent-key lookups at load 0.9, the probe limit,
//! device buffers, and invalid configurations. Without a GPU every case is skipped (see
//! `tests/common/mod.rs`; `WARPMAP_REQUIRE_GPU=1` makes a missing GPU fail).

mod common;

use common::*;
use std::collections::HashMap;
use warpmap::status::{PROBE_LIMIT, TABLE_FULL};
use warpmap::table::stadium::TICKET_BITS;
use warpmap::{
    DeviceHashTable, Error, HashTable, HostPages, InsertStatus, InsertStrategy, Key, Location,
    Stadium, StadiumConfig, Value,
};

const LOCATIONS: [Location; 2] = [Location::Device, Location::Host];

fn label<K: Key, V: Value>(config: &StadiumConfig) -> String {
    format!(
        "stadium/t{}/{:?}/{:?} <{}, {}>",
        config.ticket_bits,
        config.location,
        config.insert_strategy,
        K::NAME,
        V::NAME
    )
}

const STRATEGIES: [InsertStrategy; 4] = [
    InsertStrategy::Stash,
    InsertStrategy::ClStash,
    InsertStrategy::Hybrid { threshold: 0.4 },
    InsertStrategy::MeasuredHybrid,
];

/// Inserts `keys` with `value_for(k, round)`, checks that none failed, and adds them to `oracle`.
fn insert_all<K: Key, V: Value>(
    name: &str,
    t: &mut Stadium<K, V>,
    keys: &[K],
    round: u64,
    oracle: &mut HashMap<K, V>,
) {
    let values: Vec<V> = keys.iter().map(|&k| value_for(k, round)).collect();
    let mut st = vec![InsertStatus(0xdead_beef); keys.len()];
    let failed = t.insert_with_status(keys, &values, &mut st).unwrap();
    assert_eq!(failed, 0, "{name}: {failed} keys not placed");
    assert_insert_statuses(name, &*t, keys, &st, oracle);
    oracle.extend(keys.iter().copied().zip(values));
}

/// Fill to 0.97, then rounds of erasing a random third and re-inserting it plus fresh keys (so
/// deleted tickets are reused while keys sit behind them), checked against the oracle.
fn churn<K: Key, V: Value>(config: StadiumConfig) {
    let Some(gpu) = gpu() else { return };
    let name = label::<K, V>(&config);
    let mut t = stadium::<K, V>(&gpu, config);
    let cap = t.capacity();
    let mut rng = SplitMix64::new(0x57ad + cap as u64);
    let universe = unique_keys::<K>(&mut rng, cap, true);
    let n = cap * 97 / 100;
    let mut oracle = HashMap::new();
    insert_all(&name, &mut t, &universe[..n], 0, &mut oracle);
    assert_matches(&format!("{name} at load 0.97"), &t, &oracle);
    for round in 1..=6u64 {
        let what = format!("{name}, churn round {round}");
        let gone: Vec<K> = oracle
            .keys()
            .copied()
            .filter(|_| rng.chance(0.33))
            .collect();
        assert_eq!(t.erase(&gone).unwrap(), gone.len(), "{what}: erase count");
        for k in &gone {
            oracle.remove(k);
        }
        assert_matches(&format!("{what} after erase"), &t, &oracle);
        // Back to ~0.97 with the erased keys and absent keys of the universe.
        let mut again: Vec<K> = gone;
        let room = n.saturating_sub(oracle.len() + again.len());
        let fresh: Vec<K> = universe
            .iter()
            .filter(|k| !oracle.contains_key(k) && !again.contains(k))
            .take(room)
            .copied()
            .collect();
        again.extend(fresh);
        insert_all(&what, &mut t, &again, round, &mut oracle);
        assert_matches(&format!("{what} after re-insert"), &t, &oracle);
    }
}

#[test]
fn every_ticket_size_and_location_at_high_load_with_churn() {
    for t in TICKET_BITS {
        for location in LOCATIONS {
            churn::<u32, u32>(StadiumConfig::new(3000).ticket_bits(t).location(location));
            churn::<u64, u64>(StadiumConfig::new(2000).ticket_bits(t).location(location));
        }
    }
}

#[test]
fn collaborative_lanes_and_the_hybrid_with_churn() {
    for strategy in [STRATEGIES[1], STRATEGIES[2], STRATEGIES[3]] {
        for t in [1, 8] {
            for location in LOCATIONS {
                let config = |cap| {
                    StadiumConfig::new(cap)
                        .ticket_bits(t)
                        .location(location)
                        .insert_strategy(strategy)
                };
                churn::<u32, u32>(config(3000));
                churn::<u64, u64>(config(2000));
            }
        }
        // Keys wider than 16 bytes are read again from the input when a parked job resumes.
        churn::<[u8; 64], [u8; 256]>(
            StadiumConfig::new(1500)
                .ticket_bits(4)
                .insert_strategy(strategy),
        );
        churn::<[u8; 20], [u8; 8]>(StadiumConfig::new(1500).insert_strategy(strategy));
    }
}

/// Many warps at once: a million buckets filled to 0.97 in one batch, with every tenth key
/// given three times (duplicates racing across warps and parked jobs), for every strategy; each
/// key stored once, exactly one occurrence reported new, and every key found with one of its
/// values.
#[test]
fn one_large_batch_with_duplicates_for_every_strategy() {
    let Some(gpu) = gpu() else { return };
    let cap = if std::env::var_os("WARPMAP_SANITIZER").is_some() {
        1 << 14
    } else {
        1 << 20
    };
    for strategy in STRATEGIES {
        for t in [1, 8] {
            let config = StadiumConfig::new(cap)
                .ticket_bits(t)
                .insert_strategy(strategy);
            let name = label::<u64, u64>(&config);
            let mut table = stadium::<u64, u64>(&gpu, config);
            let size = table.capacity();
            let mut rng = SplitMix64::new(0xc1 + t as u64);
            let distinct = unique_keys::<u64>(&mut rng, size * 97 / 100, true);
            let mut keys = distinct.clone();
            for k in distinct.iter().step_by(10) {
                keys.extend([*k, *k]);
            }
            // Spread the copies over the batch (Fisher-Yates), so they race across warps.
            for i in (1..keys.len()).rev() {
                keys.swap(i, rng.index(i + 1));
            }
            let values: Vec<u64> = keys.iter().enumerate().map(|(i, k)| k ^ i as u64).collect();
            let mut st = vec![InsertStatus(0xdead_beef); keys.len()];
            let failed = table.insert_with_status(&keys, &values, &mut st).unwrap();
            assert_eq!(failed, 0, "{name}");
            assert_eq!(
                table.len().unwrap(),
                distinct.len(),
                "{name}: each key once"
            );
            let mut new_count: HashMap<u64, usize> = HashMap::new();
            let mut allowed: HashMap<u64, Vec<u64>> = HashMap::new();
            for ((k, v), s) in keys.iter().zip(&values).zip(&st) {
                assert!(!s.is_failure(), "{name}: {s:?}");
                if s.is_ok() && !s.was_update() && !s.was_present() {
                    *new_count.entry(*k).or_default() += 1;
                }
                allowed.entry(*k).or_default().push(*v);
            }
            assert!(
                distinct.iter().all(|k| new_count.get(k) == Some(&1)),
                "{name}: exactly one new occurrence per key"
            );
            let got = table.find(&distinct).unwrap();
            for (k, g) in distinct.iter().zip(&got) {
                let g = g.unwrap_or_else(|| panic!("{name}: key {k:#x} lost"));
                assert!(allowed[k].contains(&g), "{name}: key {k:#x} has {g:#x}");
            }
        }
    }
}

#[test]
fn wide_keys_and_values() {
    for location in LOCATIONS {
        for t in [1, 8] {
            churn::<[u8; 64], [u8; 256]>(
                StadiumConfig::new(1500).ticket_bits(t).location(location),
            );
        }
        churn::<[u8; 12], [u8; 4]>(StadiumConfig::new(1500).location(location));
        churn::<u128, [u8; 32]>(StadiumConfig::new(1500).location(location));
    }
}

/// Every bucket filled (load 1.0): all keys found, one more key reported `TABLE_FULL` (never a
/// hang), and after one erase exactly one new key fits.
fn load_one<K: Key, V: Value>(config: StadiumConfig) {
    let Some(gpu) = gpu() else { return };
    let name = label::<K, V>(&config);
    let mut t = stadium::<K, V>(&gpu, config);
    let cap = t.capacity();
    let mut rng = SplitMix64::new(0x10ad);
    let keys = unique_keys::<K>(&mut rng, cap + 3, true);
    let mut oracle = HashMap::new();
    insert_all(&name, &mut t, &keys[..cap], 0, &mut oracle);
    assert_eq!(t.load_factor().unwrap(), 1.0, "{name}");
    assert_matches(&format!("{name} at load 1.0"), &t, &oracle);

    let extra = &keys[cap..];
    let values: Vec<V> = extra.iter().map(|&k| value_for(k, 1)).collect();
    let mut st = vec![InsertStatus(0); extra.len()];
    assert_eq!(
        t.insert_with_status(extra, &values, &mut st).unwrap(),
        extra.len()
    );
    assert!(st.iter().all(|s| s.0 == TABLE_FULL), "{name}: {st:?}");
    assert_eq!(t.find(extra).unwrap(), vec![None; extra.len()], "{name}");

    assert_eq!(t.erase(&keys[..1]).unwrap(), 1, "{name}");
    oracle.remove(&keys[0]);
    let failed = t.insert_with_status(extra, &values, &mut st).unwrap();
    assert_eq!(failed, extra.len() - 1, "{name}: one bucket was freed");
    for ((k, v), s) in extra.iter().zip(&values).zip(&st) {
        if s.is_ok() {
            oracle.insert(*k, *v);
        }
    }
    assert_matches(&format!("{name} refilled"), &t, &oracle);
}

#[test]
fn a_table_at_load_one() {
    for t in TICKET_BITS {
        for location in LOCATIONS {
            load_one::<u32, u64>(StadiumConfig::new(4093).ticket_bits(t).location(location));
        }
    }
    load_one::<[u8; 32], [u8; 32]>(
        StadiumConfig::new(1000)
            .ticket_bits(8)
            .location(Location::Device),
    );
}

/// At load 0.9 (after churn, so deleted tickets lie on the chains), lookups of absent keys
/// answer `None`, and of present keys their values.
fn absent_lookups<K: Key, V: Value>(config: StadiumConfig) {
    let Some(gpu) = gpu() else { return };
    let name = label::<K, V>(&config);
    let mut t = stadium::<K, V>(&gpu, config);
    let cap = t.capacity();
    let mut rng = SplitMix64::new(0xab5e);
    let all = unique_keys::<K>(&mut rng, 2 * cap, false);
    let (stored, absent) = all.split_at(cap * 9 / 10);
    let mut oracle = HashMap::new();
    insert_all(&name, &mut t, stored, 0, &mut oracle);
    let gone: Vec<K> = stored.iter().copied().step_by(5).collect();
    t.erase(&gone).unwrap();
    for k in &gone {
        oracle.remove(k);
    }
    insert_all(&name, &mut t, &gone, 1, &mut oracle);
    let mut queries: Vec<K> = absent.to_vec();
    queries.extend(stored.iter().step_by(3));
    let got = t.find(&queries).unwrap();
    for (k, g) in queries.iter().zip(&got) {
        assert_eq!(g.as_ref(), oracle.get(k), "{name}: find({k:?})");
    }
    let contained = t.contains(absent).unwrap();
    assert!(contained.iter().all(|&c| !c), "{name}: an absent key found");
}

#[test]
fn absent_keys_at_load_point_nine() {
    for t in TICKET_BITS {
        for location in LOCATIONS {
            absent_lookups::<u64, u32>(
                StadiumConfig::new(1 << 14)
                    .ticket_bits(t)
                    .location(location),
            );
        }
    }
}

/// A probe limit of 1 at load 0.9: failures say PROBE_LIMIT and lose nothing else.
#[test]
fn probe_limit_reports_and_loses_nothing() {
    let Some(gpu) = gpu() else { return };
    for location in LOCATIONS {
        let config = StadiumConfig::new(1 << 14).max_probes(1).location(location);
        let name = label::<u32, u32>(&config);
        let mut t = stadium::<u32, u32>(&gpu, config);
        assert_eq!(t.max_probes(), 1);
        let mut rng = SplitMix64::new(0x9b);
        let keys = unique_keys::<u32>(&mut rng, t.capacity() * 9 / 10, true);
        let values: Vec<u32> = keys.iter().map(|&k| value_for(k, 0)).collect();
        let mut st = vec![InsertStatus(0); keys.len()];
        let failed = t.insert_with_status(&keys, &values, &mut st).unwrap();
        assert!(
            failed > 0,
            "{name}: one probe at load 0.9 must fail for some keys"
        );
        let mut oracle = HashMap::new();
        for ((k, v), s) in keys.iter().zip(&values).zip(&st) {
            if s.is_ok() {
                oracle.insert(*k, *v);
            } else {
                assert_eq!(s.0, PROBE_LIMIT, "{name}: {k:?}");
            }
        }
        assert_eq!(oracle.len(), keys.len() - failed, "{name}");
        assert_matches(&name, &t, &oracle);
    }
}

/// The device-buffer API, asynchronous failure reporting and the host-memory accounting.
#[test]
fn device_buffers_and_async_overflow() {
    let Some(gpu) = gpu() else { return };
    for location in LOCATIONS {
        let config = StadiumConfig::new(1000).location(location);
        let name = label::<u64, u64>(&config);
        let mut t = stadium::<u64, u64>(&gpu, config);
        let cap = t.capacity();
        let board = t.board_bytes();
        assert_eq!(
            board,
            cap.div_ceil(6) * 4,
            "{name}: 4-bit tickets, 6 per word"
        );
        match location {
            Location::Device => {
                assert_eq!(t.host_memory_bytes(), 0);
                assert!(t.memory_bytes() >= board + cap * 16, "{name}");
            }
            Location::Host => {
                assert_eq!(t.host_memory_bytes(), cap * 16, "{name}");
                assert!(t.memory_bytes() < board + cap * 16, "{name}");
            }
            Location::Auto => unreachable!("LOCATIONS holds resolved locations"),
        }
        assert_eq!(t.location(), location, "{name}");
        let mut rng = SplitMix64::new(0xdb);
        let keys = unique_keys::<u64>(&mut rng, 3 * cap, true);
        let values: Vec<u64> = keys.iter().map(|&k| value_for(k, 0)).collect();
        let (dk, dv) = (gpu.upload(&keys).unwrap(), gpu.upload(&values).unwrap());
        t.insert_device_async(&dk, &dv, None).unwrap();
        match t.synchronize() {
            Err(Error::TableFull { failed, .. }) => assert_eq!(failed, keys.len() - cap),
            other => panic!("{name}: synchronize after overflow gave {other:?}"),
        }
        t.synchronize().unwrap();
        assert_eq!(t.len().unwrap(), cap, "{name}");
        let mut out = gpu.alloc_filled::<u64>(keys.len(), 0).unwrap();
        let mut found = gpu.alloc_filled::<u8>(keys.len(), 0xee).unwrap();
        t.find_device(&dk, &mut out, &mut found).unwrap();
        let (out, found) = (gpu.download(&out).unwrap(), gpu.download(&found).unwrap());
        assert_eq!(found.iter().filter(|&&f| f == 1).count(), cap, "{name}");
        for i in (0..keys.len()).filter(|&i| found[i] == 1) {
            assert_eq!(out[i], values[i], "{name}: value of {:?}", keys[i]);
        }
        let stored = contents(&name, &t);
        assert_eq!(stored.len(), cap, "{name}");
        t.rehash(4 * cap).unwrap();
        assert_eq!(
            contents(&name, &t),
            stored,
            "{name}: rehash keeps every pair"
        );
    }
}

#[test]
fn invalid_configurations_are_errors() {
    let Some(gpu) = gpu() else { return };
    let err = |c: StadiumConfig| Stadium::<u32, u32>::new(gpu.clone(), c).err();
    for bits in [0, 3, 5, 16, 32] {
        let e = err(StadiumConfig::new(100).ticket_bits(bits));
        assert!(
            matches!(e, Some(Error::InvalidInput(_))),
            "ticket bits {bits}: {e:?}"
        );
    }
    let e = err(StadiumConfig::new(0));
    assert!(
        matches!(e, Some(Error::InvalidInput(_))),
        "capacity 0: {e:?}"
    );
    let e = err(StadiumConfig::new(100).max_probes(0));
    assert!(
        matches!(e, Some(Error::InvalidInput(_))),
        "max_probes 0: {e:?}"
    );
    for threshold in [-0.1, 1.5, f64::NAN] {
        let e = err(StadiumConfig::new(100).insert_strategy(InsertStrategy::Hybrid { threshold }));
        assert!(
            matches!(e, Some(Error::InvalidInput(_))),
            "hybrid threshold {threshold}: {e:?}"
        );
    }
    let e = err(StadiumConfig::new(1 << 33));
    assert!(
        matches!(e, Some(Error::Unsupported(_))),
        "2^33 buckets: {e:?}"
    );
    // Device buckets beyond GPU memory: an error, never an attempt (explicitly on the device:
    // the default, Location::Auto, would put these 687 GB in host memory).
    let e = Stadium::<[u8; 64], [u8; 256]>::new(
        gpu.clone(),
        StadiumConfig::new(1 << 31).location(Location::Device),
    )
    .err();
    assert!(
        matches!(e, Some(Error::OutOfMemory { .. })),
        "huge table: {e:?}"
    );
    // Mismatched lengths.
    let mut t = stadium::<u32, u32>(&gpu, StadiumConfig::new(100));
    assert!(matches!(
        t.insert(&[1, 2], &[1]),
        Err(Error::InvalidInput(_))
    ));
    assert_eq!(t.len().unwrap(), 0);
}

/// `Location::Auto`: a tiny device-memory budget sends the buckets to host memory (the board
/// stays on the GPU), an ample one keeps them on the device, and a budget below the board is
/// `OutOfMemory`; the table works either way. The same for host buckets on huge pages, where
/// the kernel grants them (a kernel without THP gives `Unsupported`, which is checked too).
#[test]
fn auto_location_follows_the_budget() {
    let Some(gpu) = gpu() else { return };
    let cases = [
        (Some(16384u64), Location::Host, HostPages::Pinned),
        (None, Location::Device, HostPages::Pinned),
        (Some(1 << 30), Location::Device, HostPages::Pinned),
        (Some(16384), Location::Host, HostPages::Huge),
    ];
    for (budget, want, pages) in cases {
        let mut config = StadiumConfig::new(5000).ticket_bits(8).host_pages(pages);
        if let Some(b) = budget {
            config = config.device_memory_budget(b);
        }
        assert_eq!(config.location, Location::Auto);
        let name = format!("auto, budget {budget:?}, {pages}");
        let mut t = match Stadium::<u64, [u8; 24]>::new(gpu.clone(), config) {
            Ok(t) => t,
            Err(Error::Unsupported(why)) if pages == HostPages::Huge => {
                eprintln!("{name}: no transparent huge pages here ({why}); skipped");
                continue;
            }
            Err(e) => panic!("{name}: {e}"),
        };
        assert_eq!(t.location(), want, "{name}");
        assert!(
            t.board_bytes() <= 16384,
            "{name}: the board fits the budget"
        );
        match want {
            Location::Host => {
                assert_eq!(t.host_memory_bytes(), t.capacity() * 32, "{name}");
                assert_eq!(t.host_pages(), Some(pages), "{name}");
            }
            _ => {
                assert_eq!(t.host_memory_bytes(), 0, "{name}");
                assert_eq!(t.host_pages(), None, "{name}");
            }
        }
        let mut rng = SplitMix64::new(0xa070);
        let keys = unique_keys::<u64>(&mut rng, 4000, true);
        let mut oracle = HashMap::new();
        insert_all(&name, &mut t, &keys[..3000], 1, &mut oracle);
        assert_matches(&name, &t, &oracle);
        let absent = t.contains(&keys[3000..]).unwrap();
        assert!(absent.iter().all(|&f| !f), "{name}: absent keys found");
        // Rehash decides again (with the same budget: host buckets stay in host memory).
        t.rehash(2 * t.capacity()).unwrap();
        assert_eq!(t.location(), want, "{name}: after rehash");
        assert_matches(&format!("{name} after rehash"), &t, &oracle);
    }
    // Not even the board fits the budget.
    let e = Stadium::<u64, u64>::new(
        gpu.clone(),
        StadiumConfig::new(100_000).device_memory_budget(1000),
    )
    .err();
    assert!(matches!(e, Some(Error::OutOfMemory { .. })), "{e:?}");
}
