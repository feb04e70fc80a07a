//! DyCuckoo-specific behaviour (the shared contract runs in `tests/contract.rs` on the
//! `dycuckoo/*` backends too): growth past several upsizes, shrinking through downsizes after
//! erases, the subtables' size invariants and the kept counts, the paper's dynamic workload
//! (batches of inserts, finds and erases, replayed with inserts and erases swapped) checked
//! against the oracle on the CPU backend and on DyCuckoo, eviction chains at fill 0.95 and
//! past the capacity with growth forbidden (failures reported per key), a downsize rolled back,
//! mixed batches across resizes, resizes between batches of every operation, device-buffer
//! inserts, wide values, many tables at once, and invalid configurations.
//!
//! The GPU cases skip without a GPU (`WARPMAP_REQUIRE_GPU=1` makes a missing GPU fail); the
//! host-side cases (configuration checks, the resize policy's invariants, the dynamic workload
//! on the CPU backend) run everywhere.

mod common;

use common::*;
use proptest::prelude::*;
use std::collections::HashMap;
use std::sync::Arc;
use warpmap::status::{PROBE_LIMIT, TABLE_FULL};
use warpmap::table::dycuckoo::policy::{
    self, hash_parameters, plan_downsizes, plan_upsizes, universal_hash, Geometry,
};
use warpmap::table::engine::locality::LocalityMode;
use warpmap::table::registry;
use warpmap::{
    CpuTable, DeviceHashTable, DyCuckoo, DyCuckooConfig, Error, Gpu, HashTable, InsertStatus, Key,
    MixedOp, Value,
};

fn dycuckoo<K: Key, V: Value>(gpu: &Arc<Gpu>, config: DyCuckooConfig) -> DyCuckoo<K, V> {
    let what = format!("DyCuckoo<{}, {}> {config:?}", K::NAME, V::NAME);
    DyCuckoo::new(gpu.clone(), config).unwrap_or_else(|e| panic!("creating {what}: {e}"))
}

fn statuses(n: usize) -> Vec<InsertStatus> {
    vec![InsertStatus(0xdead_beef); n]
}

/// The least capacity the table's downsizes keep (as `DyCuckooConfig::min_capacity` says).
fn floor_of(c: &DyCuckooConfig) -> usize {
    c.min_capacity.unwrap_or(c.capacity).min(c.capacity)
}

/// What must hold between any two batches: the subtables within twice each other, the
/// capacity their slots, the kept counts equal to the slots' contents, and every pair as the
/// oracle says.
fn check_table<K: Key, V: Value>(what: &str, t: &DyCuckoo<K, V>, oracle: &HashMap<K, V>) {
    let s = t.stats().unwrap_or_else(|e| panic!("{what}: stats: {e}"));
    assert!(
        s.is_balanced(),
        "{what}: subtables {:?}",
        s.subtable_buckets
    );
    assert_eq!(s.subtable_buckets, t.subtable_buckets(), "{what}");
    assert_eq!(
        t.capacity(),
        s.subtable_buckets.iter().sum::<usize>() * s.slots_per_bucket,
        "{what}: capacity"
    );
    assert_eq!(
        s.slots_per_bucket,
        128 / K::BYTES,
        "{what}: a bucket is 128 bytes of keys"
    );
    let recount = t
        .recount()
        .unwrap_or_else(|e| panic!("{what}: recount: {e}"));
    assert_eq!(
        recount, s.subtable_keys,
        "{what}: the kept counts differ from the slots"
    );
    assert_eq!(
        s.subtable_keys.iter().sum::<usize>() + s.side_keys,
        oracle.len(),
        "{what}: keys"
    );
    assert_eq!(s.rollbacks, 0, "{what}: a downsize was rolled back");
    assert_matches(what, t, oracle);
}

/// After a host-slice insert: the fill is at most β (the table grew before the batch), unless
/// the ceiling stopped it.
fn check_fill_after_insert<K: Key, V: Value>(what: &str, t: &DyCuckoo<K, V>) {
    let s = t.stats().unwrap();
    let c = t.config();
    let at_ceiling = c.max_capacity.is_some_and(|m| {
        let g = Geometry::new(
            s.subtable_buckets.iter().map(|&b| b as u64).collect(),
            s.slots_per_bucket,
        );
        g.upsized(g.upsize_target()).capacity() > m
    });
    assert!(
        s.fill_factor() <= c.beta + 1e-9 || at_ceiling,
        "{what}: fill {} above beta {} at capacity {}",
        s.fill_factor(),
        c.beta,
        t.capacity()
    );
}

/// After a host-slice erase: the resize policy has nothing left to do (the fill is at least α,
/// or a further downsize would go below the floor, above β, or cannot halve).
fn check_fill_after_erase<K: Key, V: Value>(what: &str, t: &DyCuckoo<K, V>) {
    let s = t.stats().unwrap();
    let c = t.config();
    let g = Geometry::new(
        s.subtable_buckets.iter().map(|&b| b as u64).collect(),
        s.slots_per_bucket,
    );
    let stored = s.subtable_keys.iter().sum::<usize>() as u64;
    assert!(
        plan_downsizes(&g, stored, c.alpha, c.beta, floor_of(c)).is_empty(),
        "{what}: fill {} at {:?}, but a downsize was due",
        s.fill_factor(),
        s.subtable_buckets
    );
}

// ---------------------------------------------------------------------------------------------
// Host-side: runs everywhere.

#[test]
fn configurations_are_checked() {
    for kb in [4, 8] {
        assert!(DyCuckooConfig::new(1 << 10).check(kb).is_ok());
        for bad in [
            DyCuckooConfig::new(1 << 10).subtables(1),
            DyCuckooConfig::new(1 << 10).subtables(9),
            DyCuckooConfig::new(1 << 10).fill_bounds(0.5, 0.5),
            DyCuckooConfig::new(1 << 10).fill_bounds(0.2, 1.2),
            DyCuckooConfig::new(1 << 10).fill_bounds(0.69, 0.9), // > 0.9 * 3/4
            DyCuckooConfig::new(1 << 10).max_evictions(0),
            DyCuckooConfig::new(1 << 10).max_evictions(40),
            DyCuckooConfig::new(1 << 10).max_capacity(100),
        ] {
            match bad.check(kb) {
                Err(Error::InvalidInput(why)) => assert!(!why.is_empty()),
                other => panic!("{bad:?}: {other:?}"),
            }
        }
    }
    assert!(warpmap::table::dycuckoo::supports_widths(4, 128));
    assert!(!warpmap::table::dycuckoo::supports_widths(16, 8));
}

#[test]
fn the_registry_lists_dycuckoo() {
    let info = registry::scheme("dycuckoo").expect("dycuckoo in the registry");
    assert_eq!(info.paper, "dycuckoo.txt");
    let configs = (info.test_configs)();
    assert!(configs.len() >= 2);
    for (label, c) in configs {
        assert_eq!(c.scheme(), "dycuckoo", "{label}");
        assert!(c.supports(4, 4) && c.supports(8, 128) && !c.supports(16, 4));
        if let registry::TableConfig::DyCuckoo(d) = c {
            assert!(d.check(4).is_ok() && d.check(8).is_ok(), "{label}");
        } else {
            panic!("{label}: not a DyCuckoo configuration");
        }
    }
    assert!(!(info.kernel_sources)().is_empty());
    // Without a GPU, building one is NoDevice (not a panic).
    if gpu_absent() {
        let c = registry::TableConfig::DyCuckoo(DyCuckooConfig::new(10));
        assert!(matches!(
            c.build::<u32, u32>(None, 10),
            Err(Error::NoDevice { .. })
        ));
    }
}

fn gpu_absent() -> bool {
    Gpu::default_gpu().is_err()
}

/// The device's hash (host twin) spreads keys: in a subtable of 1000 buckets, 64k random keys
/// fill every bucket within a few standard deviations of the mean.
#[test]
fn the_universal_hash_spreads_keys() {
    for kb in [4usize, 8] {
        let (a, b) = hash_parameters(17, 3, kb)[2];
        let mut per = vec![0u32; 1000];
        let mut rng = SplitMix64::new(5);
        for _ in 0..64_000 {
            let k = rng.next_u64();
            per[(universal_hash(k, a, b, kb) % 1000) as usize] += 1;
        }
        let (lo, hi) = (per.iter().min().unwrap(), per.iter().max().unwrap());
        assert!(
            *lo > 30 && *hi < 100,
            "key bytes {kb}: buckets from {lo} to {hi}"
        );
    }
}

proptest! {
    /// Growth plans end within β (unless at the ceiling), doubling the smallest subtable each
    /// time; shrink plans end within the rules; every geometry on the way stays balanced.
    #[test]
    fn resize_plans_keep_the_invariants(
        d in 2usize..=8,
        start in 1u64..40,
        stored in 0u64..20_000,
        incoming in 0u64..20_000,
        beta in 0.5f64..0.98,
        alpha_share in 0.1f64..1.0,
    ) {
        let alpha = beta * d as f64 / (d as f64 + 1.0) * alpha_share;
        let g = Geometry::new(vec![start; d], 32);
        let plan = plan_upsizes(&g, stored, incoming, beta, usize::MAX);
        let mut h = g.clone();
        for &i in &plan {
            prop_assert_eq!(i, h.upsize_target());
            h = h.upsized(i);
            prop_assert!(h.is_balanced());
        }
        prop_assert!(stored + incoming <= policy::keys_at(h.capacity(), beta));
        let total = stored + incoming;
        let shrink = plan_downsizes(&h, total / 3, alpha, beta, 0);
        let mut s = h.clone();
        for &i in &shrink {
            prop_assert_eq!(Some(i), s.downsize_target());
            s = s.downsized(i);
            prop_assert!(s.is_balanced());
            prop_assert!(total / 3 <= policy::keys_at(s.capacity(), beta));
        }
        // Done: at least α, or the next downsize is not allowed.
        let done = (total / 3) as f64 >= s.capacity() as f64 * alpha
            || match s.downsize_target() {
                None => true,
                Some(i) => total / 3 > policy::keys_at(s.downsized(i).capacity(), beta),
            };
        prop_assert!(done);
    }
}

/// The paper's dynamic workload (§6.1), scaled down: batches of `batch` new inserts, `batch`
/// finds (half present) and `r · batch` erases of present keys; then the same batches again
/// with inserts and erases swapped, so the table shrinks. Every find and erase is checked
/// against the oracle, and `check` runs after every operation.
fn dynamic_workload<T, F>(name: &str, t: &mut T, batches: usize, batch: usize, r: f64, mut check: F)
where
    T: HashTable<u32, u32> + ?Sized,
    F: FnMut(&str, &T, &HashMap<u32, u32>, Op),
{
    let mut rng = SplitMix64::new(0xd1c0);
    let universe = unique_keys::<u32>(&mut rng, batches * batch + batch, true);
    let absent = &universe[batches * batch..];
    let mut oracle: HashMap<u32, u32> = HashMap::new();
    let mut history: Vec<(Vec<u32>, Vec<u32>)> = Vec::new();
    let erases = (batch as f64 * r) as usize;
    for b in 0..batches {
        let what = format!("{name}, batch {b}");
        let ins = universe[b * batch..(b + 1) * batch].to_vec();
        let values: Vec<u32> = ins.iter().map(|&k| value_for(k, b as u64)).collect();
        t.insert(&ins, &values)
            .unwrap_or_else(|e| panic!("{what}: insert: {e}"));
        oracle.extend(ins.iter().copied().zip(values));
        check(&what, &*t, &oracle, Op::Insert);
        find_half_present(&what, t, &oracle, &ins, absent);
        let present: Vec<u32> = oracle.keys().copied().collect();
        let gone: Vec<u32> = (0..erases)
            .map(|_| present[rng.index(present.len())])
            .collect();
        let expect = gone.iter().collect::<std::collections::HashSet<_>>().len();
        assert_eq!(t.erase(&gone).unwrap(), expect, "{what}: erase count");
        for k in &gone {
            oracle.remove(k);
        }
        check(&what, &*t, &oracle, Op::Erase);
        history.push((ins, gone));
    }
    // Replayed with inserts and erases swapped: what was inserted is erased, what was erased is
    // inserted again.
    for (b, (ins, gone)) in history.iter().enumerate() {
        let what = format!("{name}, replay {b}");
        let values: Vec<u32> = gone
            .iter()
            .map(|&k| value_for(k, 1000 + b as u64))
            .collect();
        t.insert(gone, &values)
            .unwrap_or_else(|e| panic!("{what}: insert: {e}"));
        oracle.extend(gone.iter().copied().zip(values));
        check(&what, &*t, &oracle, Op::Insert);
        find_half_present(&what, t, &oracle, ins, absent);
        let expect = ins.iter().filter(|k| oracle.contains_key(k)).count();
        assert_eq!(t.erase(ins).unwrap(), expect, "{what}: erase count");
        for k in ins {
            oracle.remove(k);
        }
        check(&what, &*t, &oracle, Op::Erase);
    }
    // What the replay put back (keys erased in a later batch than they were inserted in), out.
    let what = format!("{name}, emptied");
    let rest: Vec<u32> = oracle.keys().copied().collect();
    assert_eq!(t.erase(&rest).unwrap(), rest.len(), "{what}");
    oracle.clear();
    check(&what, &*t, &oracle, Op::Erase);
}

/// Which operation a `dynamic_workload` check follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Insert,
    Erase,
}

/// Finds `keys` (some present, some erased) and as many absent keys, against the oracle.
fn find_half_present<T: HashTable<u32, u32> + ?Sized>(
    what: &str,
    t: &T,
    oracle: &HashMap<u32, u32>,
    keys: &[u32],
    absent: &[u32],
) {
    let q: Vec<u32> = keys
        .iter()
        .step_by(2)
        .chain(absent.iter().step_by(2))
        .copied()
        .collect();
    let got = t.find(&q).unwrap();
    for (k, v) in q.iter().zip(got) {
        assert_eq!(v.as_ref(), oracle.get(k), "{what}: find({k})");
    }
}

#[test]
fn dynamic_workload_on_the_cpu_backend() {
    let mut t = CpuTable::<u32, u32>::new(1 << 16).unwrap();
    let mut checks = 0;
    dynamic_workload("cpu", &mut t, 8, 4096, 0.4, |what, t, oracle, _| {
        assert_eq!(t.len().unwrap(), oracle.len(), "{what}: len");
        checks += 1;
    });
    assert_matches("cpu after the workload", &t, &HashMap::new());
    assert_eq!(checks, 33);
}

// ---------------------------------------------------------------------------------------------
// GPU cases.

/// The dynamic workload on DyCuckoo from a small table: it grows through several upsizes
/// while the batches come in and shrinks through downsizes when they are replayed; every
/// invariant holds after every operation, and emptied, the table is back at its first
/// capacity (its floor).
fn dynamic_workload_on_gpu(config: DyCuckooConfig, label: &str) {
    let Some(gpu) = gpu() else { return };
    let mut t = dycuckoo::<u32, u32>(&gpu, config.clone());
    let first = t.capacity();
    let mut peak = first;
    dynamic_workload(label, &mut t, 16, 1 << 14, 0.4, |what, t, oracle, op| {
        check_table(what, t, oracle);
        match op {
            Op::Insert => check_fill_after_insert(what, t),
            Op::Erase => check_fill_after_erase(what, t),
        }
        peak = peak.max(t.capacity());
    });
    let s = t.stats().unwrap();
    assert!(
        s.upsizes >= 5,
        "{label}: {} upsizes to a peak of {peak}",
        s.upsizes
    );
    assert!(s.downsizes >= 5, "{label}: {} downsizes", s.downsizes);
    assert!(peak >= 16 * first, "{label}: peak {peak} from {first}");
    assert_eq!(t.len().unwrap(), 0);
    assert_eq!(
        t.capacity(),
        first,
        "{label}: an empty table shrinks to its floor"
    );
}

#[test]
fn dynamic_workload_defaults() {
    dynamic_workload_on_gpu(DyCuckooConfig::new(1 << 12), "dycuckoo");
}

#[test]
fn dynamic_workload_tight_bounds_four_subtables() {
    // α 0.6, β 0.8: a halved subtable's merged buckets overflow, so residuals move.
    dynamic_workload_on_gpu(
        DyCuckooConfig::new(1 << 12)
            .subtables(4)
            .fill_bounds(0.6, 0.8),
        "dycuckoo/d4/tight",
    );
}

#[test]
fn dynamic_workload_two_subtables_short_chains() {
    dynamic_workload_on_gpu(
        DyCuckooConfig::new(1 << 12).subtables(2).max_evictions(4),
        "dycuckoo/d2/chains4",
    );
}

/// Growth from one bucket per subtable to 300k keys, u64 keys and values: every key there,
/// each batch within β, many upsizes, the subtables balanced.
fn growth<K: Key, V: Value>() {
    let Some(gpu) = gpu() else { return };
    let mut t = dycuckoo::<K, V>(&gpu, DyCuckooConfig::new(1));
    assert_eq!(t.subtable_buckets(), vec![1, 1, 1]);
    let mut rng = SplitMix64::new(41);
    let keys = unique_keys::<K>(&mut rng, 300_000, true);
    let mut oracle = HashMap::new();
    for (r, part) in keys.chunks(37_500).enumerate() {
        let what = format!("growth <{}, {}> batch {r}", K::NAME, V::NAME);
        let values: Vec<V> = part.iter().map(|&k| value_for(k, r as u64)).collect();
        let mut st = statuses(part.len());
        let failed = t.insert_with_status(part, &values, &mut st).unwrap();
        assert_eq!(failed, 0, "{what}");
        assert_insert_statuses(&what, &t, part, &st, &oracle);
        oracle.extend(part.iter().copied().zip(values));
        check_fill_after_insert(&what, &t);
        check_table(&what, &t, &oracle);
    }
    let s = t.stats().unwrap();
    assert!(s.upsizes >= 3 * 10, "{} upsizes", s.upsizes);
    assert!(t.capacity() as f64 * t.config().beta >= 300_000.0 - 2.0);
    assert!(
        s.fill_factor() >= t.config().alpha,
        "fill {}",
        s.fill_factor()
    );
}

/// A batch that may cross β in a table much larger than the batch grows on the bound (every
/// key taken as new, no count), also when every key of it is already in: the values update,
/// nothing is stored twice, and the fill stays within [α, β].
#[test]
fn growth_on_the_bound_with_a_batch_of_updates() {
    let Some(gpu) = gpu() else { return };
    let mut t = dycuckoo::<u32, u32>(&gpu, DyCuckooConfig::new(1).fill_bounds(0.4, 0.9));
    let mut rng = SplitMix64::new(7);
    let keys = unique_keys::<u32>(&mut rng, 200_000, true);
    let mut oracle = HashMap::new();
    for (r, part) in keys.chunks(20_000).enumerate() {
        let values: Vec<u32> = part.iter().map(|&k| value_for(k, r as u64)).collect();
        t.insert(part, &values).unwrap();
        oracle.extend(part.iter().copied().zip(values));
    }
    // Fill up to just below β with new keys, then send batches of keys already in until one
    // of them crosses the bound.
    let before = t.stats().unwrap().grown_on_bound_batches;
    let mut round = 0u64;
    while t.stats().unwrap().grown_on_bound_batches == before {
        round += 1;
        assert!(round < 4, "no batch grew on the bound");
        let again: Vec<u32> = keys
            .iter()
            .copied()
            .skip(round as usize)
            .step_by(2)
            .collect();
        let values: Vec<u32> = again.iter().map(|&k| value_for(k, 100 + round)).collect();
        let mut st = statuses(again.len());
        let failed = t.insert_with_status(&again, &values, &mut st).unwrap();
        assert_eq!(failed, 0, "round {round}");
        assert!(
            st.iter().all(|s| s.is_ok() && s.was_update()),
            "round {round}: an update was not one"
        );
        oracle.extend(again.iter().copied().zip(values));
        let what = format!("updates, round {round}");
        check_fill_after_insert(&what, &t);
        let f = t.stats().unwrap().fill_factor();
        assert!(f >= t.config().alpha, "{what}: fill {f} below alpha");
        check_table(&what, &t, &oracle);
    }
    assert_eq!(t.len().unwrap(), keys.len());
}

#[test]
fn growth_u32_u32() {
    growth::<u32, u32>();
}

#[test]
fn growth_u64_u64() {
    growth::<u64, u64>();
}

/// Shrinking below the first capacity (`min_capacity(0)`): after growing, erases in batches
/// halve subtables until the fill is back within the bounds; the residuals of merged buckets
/// move to other subtables; every key left is there.
fn shrink<K: Key, V: Value>(config: DyCuckooConfig) {
    let Some(gpu) = gpu() else { return };
    let mut t = dycuckoo::<K, V>(&gpu, config.min_capacity(0));
    let mut rng = SplitMix64::new(42);
    let keys = unique_keys::<K>(&mut rng, 200_000, true);
    let values: Vec<V> = keys.iter().map(|&k| value_for(k, 0)).collect();
    t.insert(&keys, &values).unwrap();
    let mut oracle: HashMap<K, V> = keys.iter().copied().zip(values).collect();
    let grown = t.capacity();
    for (r, part) in keys.chunks(20_000).enumerate().take(9) {
        let what = format!("shrink <{}, {}> erase {r}", K::NAME, V::NAME);
        assert_eq!(t.erase(part).unwrap(), part.len(), "{what}");
        for k in part {
            oracle.remove(k);
        }
        check_fill_after_erase(&what, &t);
        check_table(&what, &t, &oracle);
    }
    let s = t.stats().unwrap();
    assert!(s.downsizes >= 3, "{} downsizes", s.downsizes);
    assert!(
        t.capacity() * 3 <= grown,
        "capacity {} from {grown}",
        t.capacity()
    );
    assert!(
        s.fill_factor() >= t.config().alpha,
        "fill {}",
        s.fill_factor()
    );
    // The table takes keys again after shrinking.
    let old: std::collections::HashSet<K> = keys.iter().copied().collect();
    let more = unique_keys::<K>(&mut SplitMix64::new(43), 250_000, false);
    let fresh: Vec<K> = more
        .into_iter()
        .filter(|k| !old.contains(k))
        .take(50_000)
        .collect();
    let values: Vec<V> = fresh.iter().map(|&k| value_for(k, 1)).collect();
    t.insert(&fresh, &values).unwrap();
    oracle.extend(fresh.iter().copied().zip(values));
    check_table("shrink, then grow again", &t, &oracle);
}

#[test]
fn shrink_u32_u32() {
    shrink::<u32, u32>(DyCuckooConfig::new(1 << 10));
}

#[test]
fn shrink_u64_u32_tight_bounds() {
    shrink::<u64, u32>(
        DyCuckooConfig::new(1 << 10)
            .subtables(4)
            .fill_bounds(0.6, 0.8),
    );
}

/// Residuals: with α 0.6 and β 0.8 a halved subtable's merged buckets hold about 1.2 buckets'
/// worth of keys, so downsizes move pairs into the other subtables; none is lost.
#[test]
fn downsizes_move_residuals() {
    let Some(gpu) = gpu() else { return };
    let config = DyCuckooConfig::new(1 << 10)
        .subtables(4)
        .fill_bounds(0.6, 0.8)
        .min_capacity(0);
    let mut t = dycuckoo::<u32, u32>(&gpu, config);
    let mut rng = SplitMix64::new(44);
    let keys = unique_keys::<u32>(&mut rng, 100_000, false);
    t.insert(&keys, &keys).unwrap();
    let mut oracle: HashMap<u32, u32> = keys.iter().map(|&k| (k, k)).collect();
    for part in keys.chunks(10_000).take(8) {
        t.erase(part).unwrap();
        for k in part {
            oracle.remove(k);
        }
    }
    let s = t.stats().unwrap();
    assert!(s.downsizes > 0 && s.residuals > 0, "{s:?}");
    check_table("after downsizes with residuals", &t, &oracle);
}

/// Eviction chains at fill 0.95 in a table that may not grow (`max_capacity` = its capacity,
/// β 0.97): the keys are placed (any that is not is reported and absent); then 15 % more keys
/// than the capacity: the overflow is reported per key (TABLE_FULL, nothing else), `insert`
/// says TableFull, and every placed key is there with its value.
fn chains_at_high_fill<K: Key, V: Value>(locality: LocalityMode) {
    let Some(gpu) = gpu() else { return };
    let probe = DyCuckooConfig::new(1 << 16)
        .fill_bounds(0.4, 0.97)
        .locality(locality);
    let cap = dycuckoo::<K, V>(&gpu, probe.clone()).capacity();
    let mut t = dycuckoo::<K, V>(&gpu, probe.max_capacity(cap));
    let mut rng = SplitMix64::new(45);
    // (The sentinel keys among the first: a partitioned build leaves them to the side path.)
    let keys = unique_keys::<K>(&mut rng, cap * 115 / 100, true);
    let (fill, over) = keys.split_at(cap * 95 / 100);
    let mut oracle = HashMap::new();
    let mut failures = 0;
    for (name, part) in [("fill 0.95", fill), ("beyond the capacity", over)] {
        let values: Vec<V> = part.iter().map(|&k| value_for(k, 0)).collect();
        let mut st = statuses(part.len());
        let failed = t.insert_with_status(part, &values, &mut st).unwrap();
        assert_eq!(
            failed,
            st.iter().filter(|s| s.is_failure()).count(),
            "{name}"
        );
        let mut lost = Vec::new();
        for ((k, v), s) in part.iter().zip(&values).zip(&st) {
            if s.is_ok() {
                assert!(!s.was_update(), "{name}: new key {k:?} {s:?}");
                oracle.insert(*k, *v);
            } else {
                assert_eq!(s.0, TABLE_FULL, "{name}: failure status {s:?}");
                lost.push(*k);
            }
        }
        assert!(
            t.contains(&lost).unwrap().iter().all(|c| !c),
            "{name}: a key reported unplaced is in the table"
        );
        assert_eq!(
            t.capacity(),
            cap,
            "{name}: the table grew past max_capacity"
        );
        check_table(&format!("chains ({locality:?}), {name}"), &t, &oracle);
        failures += failed;
        if name == "fill 0.95" {
            // The paper's failure rate at 0.95 is below 1e-5 (Tables 4-8).
            assert!(
                failed * 10_000 <= part.len(),
                "{failed} of {} keys unplaced at fill 0.95",
                part.len()
            );
        } else {
            assert!(failed > 0, "more keys than slots, yet none was refused");
            assert!(oracle.len() - side(&oracle) <= cap);
        }
    }
    assert!(failures > 0);
    // The fresh build took the partitioned path where asked (and only there).
    let partitioned = t.stats().unwrap().partitioned_batches;
    assert_eq!(
        partitioned > 0,
        locality == LocalityMode::On,
        "{locality:?}"
    );
    // More new keys than free slots: at least the excess is refused, as TableFull.
    let free = cap - (oracle.len() - side(&oracle));
    let seen: std::collections::HashSet<K> = keys.iter().copied().collect();
    let extra: Vec<K> = unique_keys::<K>(&mut SplitMix64::new(46), free + 2000, false)
        .into_iter()
        .filter(|k| !seen.contains(k))
        .take(free + 10)
        .collect();
    assert_eq!(extra.len(), free + 10);
    match t.insert(&extra, &vec![V::zeroed(); extra.len()]) {
        Err(Error::TableFull { failed, batch, .. }) => {
            assert_eq!(batch, extra.len());
            assert!(failed >= 10, "{failed} refused");
        }
        other => panic!("insert into a full table that may not grow: {other:?}"),
    }
    assert!(t.len().unwrap() - side(&oracle) <= cap);
}

/// The sentinel keys among `oracle`'s: they live on the side path, beside the subtables' slots.
fn side<K: Key, V>(oracle: &HashMap<K, V>) -> usize {
    sentinel_keys::<K>()
        .iter()
        .filter(|k| oracle.contains_key(k))
        .count()
}

/// Fresh batches (into an empty table, and of keys all absent from a non-empty one, which the
/// growth check counts): the insert then reads only the key's target bucket. Every key repeats
/// up to four times in its batch, and the second batch takes the fill to 0.85 (full target
/// buckets send keys to the eviction chains), yet each key is stored once, reported new once.
fn fresh_batches_store_repeated_keys_once<K: Key, V: Value>(locality: LocalityMode) {
    let Some(gpu) = gpu() else { return };
    let probe = DyCuckooConfig::new(1 << 16)
        .fill_bounds(0.4, 0.95)
        .locality(locality);
    let cap = dycuckoo::<K, V>(&gpu, probe.clone()).capacity();
    let mut t = dycuckoo::<K, V>(&gpu, probe.max_capacity(cap));
    let mut rng = SplitMix64::new(61);
    let keys = unique_keys::<K>(&mut rng, cap * 85 / 100, false);
    let mut oracle = HashMap::new();
    for (round, part) in [
        (0u64, &keys[..cap * 60 / 100]),
        (1, &keys[cap * 60 / 100..]),
    ] {
        let what = format!("fresh batch {round} ({locality:?}), {} keys", part.len());
        // Key j appears 1 + j % 4 times, the copies spread over the batch.
        let mut batch: Vec<K> = part
            .iter()
            .enumerate()
            .flat_map(|(j, &k)| std::iter::repeat_n(k, 1 + j % 4))
            .collect();
        for i in (1..batch.len()).rev() {
            batch.swap(i, rng.next_u64() as usize % (i + 1));
        }
        let values: Vec<V> = batch.iter().map(|&k| value_for(k, round)).collect();
        let mut st = statuses(batch.len());
        let failed = t.insert_with_status(&batch, &values, &mut st).unwrap();
        assert_eq!(failed, 0, "{what}: keys not placed at fill 0.85");
        let mut new_keys = HashMap::new();
        for (k, s) in batch.iter().zip(&st) {
            assert!(s.is_ok(), "{what}: {k:?} {s:?}");
            if !s.was_update() {
                *new_keys.entry(*k).or_insert(0) += 1;
            }
        }
        assert_eq!(new_keys.len(), part.len(), "{what}: keys reported new");
        assert!(
            new_keys.values().all(|&c| c == 1),
            "{what}: a key reported new more than once"
        );
        oracle.extend(part.iter().map(|&k| (k, value_for::<K, V>(k, round))));
        assert_eq!(t.capacity(), cap, "{what}");
        check_table(&what, &t, &oracle);
    }
}

/// Checked batches (plain batches into a non-empty table that the bound does not count): the
/// first launch looks for each key in all its buckets before it takes the first empty slot of
/// its order. The batch mixes keys present (updates), keys erased before it (their slots, and
/// others before them in their order, now empty), and new keys, some twice; then a batch of
/// present keys only. Each key is stored once with the batch's value and reported new once at
/// most.
fn checked_batches_update_and_place_once<K: Key, V: Value>() {
    let Some(gpu) = gpu() else { return };
    let probe = DyCuckooConfig::new(1 << 16).fill_bounds(0.4, 0.95);
    let cap = dycuckoo::<K, V>(&gpu, probe.clone()).capacity();
    let mut t = dycuckoo::<K, V>(&gpu, probe.min_capacity(cap).max_capacity(cap));
    let mut rng = SplitMix64::new(67);
    let keys = unique_keys::<K>(&mut rng, cap * 55 / 100, false);
    let (first, new) = keys.split_at(cap * 40 / 100);
    let mut oracle = HashMap::new();
    let values: Vec<V> = first.iter().map(|&k| value_for(k, 0)).collect();
    t.insert(first, &values).unwrap();
    oracle.extend(first.iter().map(|&k| (k, value_for::<K, V>(k, 0))));
    // Every third key erased (from here on its slot is a hole in its bucket).
    let erased: Vec<K> = first.iter().copied().step_by(3).collect();
    t.erase(&erased).unwrap();
    for k in &erased {
        oracle.remove(k);
    }
    check_table("before the checked batches", &t, &oracle);
    let before = t.stats().unwrap();

    // Round 1: some of the present keys, every erased key, and the new keys; one key in five
    // twice.
    let present: Vec<K> = (0..first.len())
        .filter(|i| i % 3 != 0 && i % 4 == 1)
        .map(|i| first[i])
        .collect();
    let unique: Vec<K> = present.iter().chain(&erased).chain(new).copied().collect();
    let mut batch: Vec<K> = unique
        .iter()
        .enumerate()
        .flat_map(|(j, &k)| std::iter::repeat_n(k, 1 + usize::from(j % 5 == 0)))
        .collect();
    for i in (1..batch.len()).rev() {
        batch.swap(i, rng.next_u64() as usize % (i + 1));
    }
    for (round, batch) in [(1u64, batch), (2, present.clone())] {
        let what = format!("checked batch {round}, {} keys", batch.len());
        let values: Vec<V> = batch.iter().map(|&k| value_for(k, round)).collect();
        let mut st = statuses(batch.len());
        let failed = t.insert_with_status(&batch, &values, &mut st).unwrap();
        assert_eq!(failed, 0, "{what}: keys not placed");
        let mut reported_new = HashMap::new();
        for (k, s) in batch.iter().zip(&st) {
            assert!(s.is_ok(), "{what}: {k:?} {s:?}");
            if !s.was_update() {
                *reported_new.entry(*k).or_insert(0) += 1;
            }
        }
        let absent_before = batch
            .iter()
            .copied()
            .collect::<std::collections::HashSet<K>>()
            .into_iter()
            .filter(|k| !oracle.contains_key(k))
            .count();
        assert_eq!(
            reported_new.len(),
            absent_before,
            "{what}: keys reported new"
        );
        assert!(
            reported_new.keys().all(|k| !oracle.contains_key(k)),
            "{what}: a present key reported new"
        );
        assert!(
            reported_new.values().all(|&c| c == 1),
            "{what}: a key reported new more than once"
        );
        oracle.extend(batch.iter().map(|&k| (k, value_for::<K, V>(k, round))));
        check_table(&what, &t, &oracle);
    }
    let after = t.stats().unwrap();
    assert_eq!(
        after.checked_batches - before.checked_batches,
        2,
        "both batches checked ({after:?})"
    );
    assert_eq!(after.counted_batches, before.counted_batches, "{after:?}");
}

#[test]
fn checked_batches_update_and_place_once_u32_u32() {
    checked_batches_update_and_place_once::<u32, u32>();
}

#[test]
fn checked_batches_update_and_place_once_u64_u64() {
    checked_batches_update_and_place_once::<u64, u64>();
}

#[test]
fn fresh_batches_store_repeated_keys_once_u32_u32() {
    fresh_batches_store_repeated_keys_once::<u32, u32>(LocalityMode::Off);
}

#[test]
fn fresh_batches_store_repeated_keys_once_u64_u64() {
    fresh_batches_store_repeated_keys_once::<u64, u64>(LocalityMode::Off);
}

/// The same through the partitioned build (the first fit over the keys split by target
/// subtable and stretch, outcomes back through the split's positions).
#[test]
fn fresh_batches_store_repeated_keys_once_partitioned_u32_u32() {
    fresh_batches_store_repeated_keys_once::<u32, u32>(LocalityMode::On);
}

#[test]
fn fresh_batches_store_repeated_keys_once_partitioned_u64_u64() {
    fresh_batches_store_repeated_keys_once::<u64, u64>(LocalityMode::On);
}

#[test]
fn chains_at_high_fill_u32_u32() {
    chains_at_high_fill::<u32, u32>(LocalityMode::Off);
}

#[test]
fn chains_at_high_fill_u64_u64() {
    chains_at_high_fill::<u64, u64>(LocalityMode::Off);
}

#[test]
fn chains_at_high_fill_partitioned_u32_u32() {
    chains_at_high_fill::<u32, u32>(LocalityMode::On);
}

#[test]
fn chains_at_high_fill_partitioned_u64_u64() {
    chains_at_high_fill::<u64, u64>(LocalityMode::On);
}

/// A downsize whose residuals cannot be placed is rolled back: two subtables of 8 and 4
/// buckets, keys chosen (with the host twin of the device hash) to live only in buckets 0 and 4
/// of subtable 0 and bucket 0 of subtable 1. Halving subtable 0 merges its two buckets: the
/// residuals' only other bucket is full, so `downsize` returns false and nothing changed.
#[test]
fn a_downsize_that_cannot_place_its_residuals_is_rolled_back() {
    let Some(gpu) = gpu() else { return };
    let seed = 0x0dd_ba11;
    let config = DyCuckooConfig::new(256)
        .subtables(2)
        .fill_bounds(0.3, 0.95)
        .min_capacity(0)
        .max_capacity(384)
        .seed(seed);
    let mut t = dycuckoo::<u32, u32>(&gpu, config);
    assert_eq!(t.subtable_buckets(), vec![4, 4]);
    assert!(t.upsize().unwrap());
    assert_eq!(t.subtable_buckets(), vec![8, 4]);
    assert!(!t.upsize().unwrap(), "max_capacity 384");
    let h = hash_parameters(seed, 2, 4);
    let keys: Vec<u32> = (1u32..)
        .filter(|&k| {
            let b0 = universal_hash(k as u64, h[0].0, h[0].1, 4) % 8;
            let b1 = universal_hash(k as u64, h[1].0, h[1].1, 4) % 4;
            (b0 == 0 || b0 == 4) && b1 == 0
        })
        .take(80)
        .collect();
    let mut st = statuses(keys.len());
    t.insert_with_status(&keys, &keys, &mut st).unwrap();
    let oracle: HashMap<u32, u32> = keys
        .iter()
        .zip(&st)
        .filter(|(_, s)| s.is_ok())
        .map(|(&k, _)| (k, k))
        .collect();
    assert!(
        oracle.len() > 64,
        "only {} of the 80 keys placed in their 96 slots",
        oracle.len()
    );
    assert_eq!(t.recount().unwrap().iter().sum::<usize>(), oracle.len());
    let before = t.stats().unwrap();
    assert!(!t.downsize().unwrap(), "the residuals had nowhere to go");
    let after = t.stats().unwrap();
    assert_eq!(after.rollbacks, 1);
    assert_eq!(after.subtable_buckets, vec![8, 4]);
    assert_eq!(after.subtable_keys, before.subtable_keys);
    assert_eq!(t.recount().unwrap(), after.subtable_keys);
    assert_matches("after a rolled-back downsize", &t, &oracle);
}

/// Mixed batches (inserts and finds together) that push the table past β: it grows first
/// (counting only the insert operations' absent keys), finds of older keys see their values,
/// new keys are found with theirs or not at all, and the table ends with every insert.
#[test]
fn mixed_batches_across_resizes() {
    let Some(gpu) = gpu() else { return };
    let mut t = dycuckoo::<u32, u64>(&gpu, DyCuckooConfig::new(1 << 10));
    let mut rng = SplitMix64::new(47);
    let keys = unique_keys::<u32>(&mut rng, 60_000, true);
    let mut oracle: HashMap<u32, u64> = HashMap::new();
    for (r, part) in keys.chunks(12_000).enumerate() {
        let what = format!("mixed batch {r}");
        let old: Vec<u32> = oracle.keys().copied().take(4000).collect();
        let mut ops = Vec::new();
        let mut bk = Vec::new();
        let mut bv = Vec::new();
        for &k in part {
            ops.push(MixedOp::Insert);
            bk.push(k);
            bv.push(value_for::<u32, u64>(k, r as u64));
            ops.push(MixedOp::Find);
            bk.push(k);
            bv.push(0);
        }
        for &k in &old {
            ops.push(MixedOp::Find);
            bk.push(k);
            bv.push(0);
        }
        for i in (1..ops.len()).rev() {
            let j = rng.index(i + 1);
            ops.swap(i, j);
            bk.swap(i, j);
            bv.swap(i, j);
        }
        let n = ops.len();
        let mut st = statuses(n);
        let mut out = vec![u64::MAX; n];
        let mut found = vec![false; n];
        let failed = t
            .mixed_batch(&ops, &bk, &bv, &mut st, &mut out, &mut found)
            .unwrap();
        assert_eq!(failed, 0, "{what}");
        for i in 0..n {
            match ops[i] {
                MixedOp::Insert => assert!(st[i].is_ok(), "{what}: {:?}", st[i]),
                MixedOp::Find => match oracle.get(&bk[i]) {
                    Some(v) => {
                        assert!(found[i], "{what}: old key {} not found", bk[i]);
                        assert_eq!(out[i], *v, "{what}: old key {}", bk[i]);
                    }
                    None if found[i] => {
                        assert_eq!(out[i], value_for::<u32, u64>(bk[i], r as u64), "{what}")
                    }
                    None => assert_eq!(out[i], u64::MAX, "{what}: a miss wrote out"),
                },
                MixedOp::Erase => unreachable!(),
            }
        }
        for &k in part {
            oracle.insert(k, value_for(k, r as u64));
        }
        check_fill_after_insert(&what, &t);
        check_table(&what, &t, &oracle);
    }
    assert!(t.stats().unwrap().upsizes > 0);
    // Erases in a mixed batch are refused, and nothing changes.
    let mut st = statuses(2);
    let r = t.mixed_batch(
        &[MixedOp::Insert, MixedOp::Erase],
        &[7, keys[0]],
        &[1, 0],
        &mut st,
        &mut [0; 2],
        &mut [false; 2],
    );
    assert!(
        matches!(r, Err(Error::Unsupported(ref why)) if why.contains("dycuckoo")),
        "{r:?}"
    );
    check_table("after a refused mixed erase", &t, &oracle);
}

/// Explicit resizes between batches of every operation (insert, insert_if_absent, find, erase,
/// mixed, rehash, reserve, clear): the contents never change with the geometry.
#[test]
fn resizes_between_batches_of_every_op() {
    let Some(gpu) = gpu() else { return };
    let config = DyCuckooConfig::new(1 << 12).min_capacity(0);
    let mut t = dycuckoo::<u64, u32>(&gpu, config);
    let mut rng = SplitMix64::new(48);
    let pool = unique_keys::<u64>(&mut rng, 8000, true);
    let mut oracle: HashMap<u64, u32> = HashMap::new();
    for round in 0..40u64 {
        let what = format!("round {round}");
        match round % 4 {
            0 => assert!(t.upsize().unwrap(), "{what}"),
            1 => {
                t.downsize().unwrap();
            }
            2 => t.fit_fill_bounds().unwrap(),
            _ => {}
        }
        check_table(&format!("{what}, resized"), &t, &oracle);
        let batch: Vec<u64> = (0..1500).map(|_| pool[rng.index(pool.len())]).collect();
        match round % 8 {
            0 | 1 => {
                let values: Vec<u32> = batch.iter().map(|&k| value_for(k, round)).collect();
                t.insert(&batch, &values).unwrap();
                for (k, v) in batch.iter().zip(values) {
                    oracle.insert(*k, v);
                }
            }
            2 => {
                let values: Vec<u32> = batch.iter().map(|&k| value_for(k, round)).collect();
                t.insert_if_absent(&batch, &values).unwrap();
                // Which copy of a key new in this batch wins is unspecified: take the table's.
                let got = t.find(&batch).unwrap();
                for (k, g) in batch.iter().zip(got) {
                    if !oracle.contains_key(k) {
                        oracle.insert(*k, g.expect("inserted"));
                    }
                }
            }
            3 => {
                let expect = batch
                    .iter()
                    .collect::<std::collections::HashSet<_>>()
                    .into_iter()
                    .filter(|k| oracle.contains_key(k))
                    .count();
                assert_eq!(t.erase(&batch).unwrap(), expect, "{what}");
                for k in &batch {
                    oracle.remove(k);
                }
            }
            4 => {
                let ops: Vec<MixedOp> = (0..batch.len())
                    .map(|i| {
                        if i % 2 == 0 {
                            MixedOp::Insert
                        } else {
                            MixedOp::Find
                        }
                    })
                    .collect();
                let values: Vec<u32> = batch.iter().map(|&k| value_for(k, round)).collect();
                let n = batch.len();
                let (mut st, mut out, mut found) = (statuses(n), vec![0; n], vec![false; n]);
                let failed = t
                    .mixed_batch(&ops, &batch, &values, &mut st, &mut out, &mut found)
                    .unwrap();
                assert_eq!(failed, 0, "{what}");
                // Duplicated keys race inside the batch: read back what was kept.
                let inserted: Vec<u64> = batch.iter().step_by(2).copied().collect();
                let got = t.find(&inserted).unwrap();
                for (k, g) in inserted.iter().zip(got) {
                    oracle.insert(*k, g.expect("inserted by the mixed batch"));
                }
            }
            5 => {
                let cap = t.capacity();
                t.rehash(cap * 2).unwrap();
                assert!(t.capacity() >= cap * 2, "{what}: rehash");
            }
            6 => {
                t.reserve(20_000).unwrap();
                assert!(t.capacity() as f64 * t.config().beta >= (oracle.len() + 20_000) as f64);
            }
            _ => {
                if round == 31 {
                    t.clear().unwrap();
                    oracle.clear();
                }
            }
        }
        check_table(&what, &t, &oracle);
    }
}

/// Device-buffer inserts grow the table too (synchronising only near β), and report through
/// statuses and `synchronize`.
#[test]
fn device_buffer_inserts_grow() {
    let Some(gpu) = gpu() else { return };
    let mut t = dycuckoo::<u32, u32>(&gpu, DyCuckooConfig::new(1 << 12));
    let mut rng = SplitMix64::new(49);
    let keys = unique_keys::<u32>(&mut rng, 1 << 18, true);
    let mut oracle = HashMap::new();
    for (r, part) in keys.chunks(1 << 15).enumerate() {
        let values: Vec<u32> = part.iter().map(|&k| value_for(k, r as u64)).collect();
        let (dk, dv) = (gpu.upload(part).unwrap(), gpu.upload(&values).unwrap());
        let mut ds = gpu.alloc_filled::<u32>(part.len(), 0xee).unwrap();
        t.insert_device_async(&dk, &dv, Some(&mut ds)).unwrap();
        t.synchronize().unwrap();
        let st: Vec<InsertStatus> = gpu
            .download(&ds)
            .unwrap()
            .into_iter()
            .map(InsertStatus)
            .collect();
        assert_insert_statuses("device insert", &t, part, &st, &oracle);
        oracle.extend(part.iter().copied().zip(values));
        check_fill_after_insert(&format!("device batch {r}"), &t);
    }
    check_table("after device inserts", &t, &oracle);
    assert!(t.stats().unwrap().upsizes >= 5);
    // Device-buffer erases do not shrink; fit_fill_bounds does.
    let dk = gpu.upload(&keys[..(1 << 18) - 1000]).unwrap();
    let cap = t.capacity();
    t.erase_device_async(&dk).unwrap();
    t.synchronize().unwrap();
    for k in &keys[..(1 << 18) - 1000] {
        oracle.remove(k);
    }
    assert_eq!(t.capacity(), cap);
    t.fit_fill_bounds().unwrap();
    assert!(t.capacity() < cap);
    check_fill_after_erase("after fit_fill_bounds", &t);
    check_table("after fit_fill_bounds", &t, &oracle);
}

/// Values of 4 to 128 bytes (and 256) through growth and shrinking, with the sentinel keys.
fn wide_values<V: Value>() {
    let Some(gpu) = gpu() else { return };
    let mut t = dycuckoo::<u64, V>(&gpu, DyCuckooConfig::new(1 << 8).min_capacity(0));
    let mut rng = SplitMix64::new(50);
    let keys = unique_keys::<u64>(&mut rng, 40_000, true);
    let mut oracle = HashMap::new();
    for (r, part) in keys.chunks(8000).enumerate() {
        let values: Vec<V> = part.iter().map(|&k| value_for(k, r as u64)).collect();
        t.insert(part, &values).unwrap();
        oracle.extend(part.iter().copied().zip(values));
    }
    // Update a third, then erase most.
    let upd: Vec<u64> = keys.iter().copied().step_by(3).collect();
    let values: Vec<V> = upd.iter().map(|&k| value_for(k, 99)).collect();
    t.insert(&upd, &values).unwrap();
    oracle.extend(upd.iter().copied().zip(values));
    check_table(&format!("{} values, grown", V::NAME), &t, &oracle);
    let gone: Vec<u64> = keys.iter().copied().filter(|k| k % 5 != 0).collect();
    t.erase(&gone).unwrap();
    for k in &gone {
        oracle.remove(k);
    }
    assert!(t.stats().unwrap().downsizes > 0);
    check_table(&format!("{} values, shrunk", V::NAME), &t, &oracle);
}

#[test]
fn wide_values_4() {
    wide_values::<u32>();
}

#[test]
fn wide_values_16() {
    wide_values::<[u8; 16]>();
}

#[test]
fn wide_values_32() {
    wide_values::<[u8; 32]>();
}

#[test]
fn wide_values_128() {
    wide_values::<[u8; 128]>();
}

#[test]
fn wide_values_256() {
    wide_values::<[u8; 256]>();
}

/// Several tables in one program, with different parameters, used in turn: each keeps its own
/// keys (nothing is shared through device globals).
#[test]
fn many_tables_at_once() {
    let Some(gpu) = gpu() else { return };
    let mut tables: Vec<DyCuckoo<u32, u32>> = (0..4)
        .map(|i| {
            dycuckoo(
                &gpu,
                DyCuckooConfig::new(1000 << i)
                    .subtables(2 + i as u32)
                    .seed(100 + i as u64),
            )
        })
        .collect();
    let mut oracles: Vec<HashMap<u32, u32>> = vec![HashMap::new(); 4];
    let mut rng = SplitMix64::new(51);
    for round in 0..6u64 {
        for (i, t) in tables.iter_mut().enumerate() {
            let keys = unique_keys::<u32>(&mut rng, 5000, round == 0);
            let values: Vec<u32> = keys.iter().map(|&k| value_for(k, i as u64)).collect();
            t.insert(&keys, &values).unwrap();
            oracles[i].extend(keys.iter().copied().zip(values));
            if round % 2 == 1 {
                let gone: Vec<u32> = oracles[i].keys().copied().take(3000).collect();
                t.erase(&gone).unwrap();
                for k in &gone {
                    oracles[i].remove(k);
                }
            }
        }
    }
    for (i, t) in tables.iter().enumerate() {
        check_table(&format!("table {i}"), t, &oracles[i]);
    }
}

/// Invalid configurations and unsupported widths are errors, not panics; nothing hangs.
#[test]
fn invalid_configurations_on_the_gpu() {
    let Some(gpu) = gpu() else { return };
    for bad in [
        DyCuckooConfig::new(0),
        DyCuckooConfig::new(100).subtables(1),
        DyCuckooConfig::new(100).fill_bounds(0.8, 0.9),
        DyCuckooConfig::new(100).max_evictions(0),
        DyCuckooConfig::new(1000).max_capacity(10),
    ] {
        let r = DyCuckoo::<u32, u32>::new(gpu.clone(), bad.clone());
        assert!(
            matches!(r, Err(Error::InvalidInput(_))),
            "{bad:?}: {:?}",
            r.err()
        );
    }
    let r = DyCuckoo::<u128, u32>::new(gpu.clone(), DyCuckooConfig::new(100));
    assert!(matches!(r, Err(Error::Unsupported(_))), "{:?}", r.err());
    let r = DyCuckoo::<u32, u32>::new(gpu.clone(), DyCuckooConfig::new(usize::MAX / 2));
    assert!(
        matches!(
            r,
            Err(Error::OutOfMemory { .. }) | Err(Error::Unsupported(_))
        ),
        "{:?}",
        r.err()
    );
}

/// The statuses a failure may carry are TABLE_FULL (a chain ran out and the table may not grow)
/// and PROBE_LIMIT (a key lost 2^20 votes); under heavy contention on one key no key loses
/// that many: 20k copies of 8 keys in one batch all succeed.
#[test]
fn contention_on_a_few_keys() {
    let Some(gpu) = gpu() else { return };
    let mut t = dycuckoo::<u32, u32>(&gpu, DyCuckooConfig::new(1 << 10));
    let keys: Vec<u32> = (0..20_000u32).map(|i| (i % 8) * 7919 + 1).collect();
    let values: Vec<u32> = (0..20_000u32).collect();
    let mut st = statuses(keys.len());
    assert_eq!(t.insert_with_status(&keys, &values, &mut st).unwrap(), 0);
    assert!(st.iter().all(|s| s.0 & (PROBE_LIMIT | TABLE_FULL) == 0));
    let new = st.iter().filter(|s| !s.was_update()).count();
    assert_eq!(new, 8, "each key new exactly once");
    assert_eq!(t.len().unwrap(), 8);
    let got = t.find(&keys[..8]).unwrap();
    for (i, g) in got.iter().enumerate() {
        let v = g.expect("present");
        assert_eq!(keys[v as usize], keys[i], "a value of the key's own copies");
    }
}
