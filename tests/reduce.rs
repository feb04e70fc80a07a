//! Reduce by key (`HashTable::insert_or_apply`, `InsertMode::Apply`): every key ends with the
//! reduction of its rows and of the value it had, against an oracle that folds the rows in
//! order. On the CPU backend and on WarpDrive's three layouts (packed u32 pairs; the pair layout
//! of 8-byte keys or values; the tagged layout of wide keys), for sums, minima and maxima of
//! every numeric value type, with many rows per key in a batch and across batches, the sentinel
//! keys among them, through host slices (with statuses), device batches with statuses, and
//! device batches without (the locality-partitioned path, forced on). Float values are small
//! integers, so their sums are exact in any order. And the refusals: values that are not numeric,
//! tables that do not reduce. GPU cases skip without a GPU unless `WARPMAP_REQUIRE_GPU=1`.

mod common;

use common::*;
use std::collections::HashMap;
use warpmap::table::warpdrive::LocalityMode;
use warpmap::{
    CpuTable, DeviceHashTable, DyCuckoo, DyCuckooConfig, Error, HashTable, InsertMode,
    InsertStatus, Key, Reduce, TwoLevelConfig, TwoLevelCpu, Value, WarpDriveConfig,
};

/// Values made from small integers (between -500 and 499 where the type is signed), so that
/// float sums of a few thousand of them are exact whatever the order of the additions.
trait Small: Value {
    fn small(x: u64) -> Self;
}
impl Small for u32 {
    fn small(x: u64) -> Self {
        (x % 1000) as u32
    }
}
impl Small for u64 {
    fn small(x: u64) -> Self {
        // Large enough to wrap when summed: the sum is a wrapping one.
        (x % 1000).wrapping_mul(0x0123_4567_89ab_cdef)
    }
}
impl Small for i32 {
    fn small(x: u64) -> Self {
        (x % 1000) as i32 - 500
    }
}
impl Small for i64 {
    fn small(x: u64) -> Self {
        (x % 1000) as i64 - 500
    }
}
impl Small for f32 {
    fn small(x: u64) -> Self {
        ((x % 1000) as i32 - 500) as f32
    }
}
impl Small for f64 {
    fn small(x: u64) -> Self {
        ((x % 1000) as i64 - 500) as f64 * 0.5
    }
}

const OPS: [Reduce; 3] = [Reduce::Sum, Reduce::Min, Reduce::Max];

/// `rows` rows over `distinct` keys (the sentinels among them where the key type has any), each
/// row's key drawn at random, so most keys have many rows in the batch.
fn rows<K: Key, V: Small>(rng: &mut SplitMix64, universe: &[K], rows: usize) -> (Vec<K>, Vec<V>) {
    (0..rows)
        .map(|_| {
            (
                universe[rng.index(universe.len())],
                V::small(rng.next_u64()),
            )
        })
        .unzip()
}

/// The oracle: `before` with every row folded in, in order.
fn fold<K: Key, V: Value>(
    before: &HashMap<K, V>,
    keys: &[K],
    values: &[V],
    op: Reduce,
) -> HashMap<K, V> {
    let mut m = before.clone();
    for (&k, &v) in keys.iter().zip(values) {
        m.entry(k).and_modify(|x| *x = x.reduce(v, op)).or_insert(v);
    }
    m
}

/// How a batch goes in.
#[derive(Clone, Copy, Debug)]
enum Path {
    /// `insert_with_mode` with statuses (host slices).
    Host,
    /// `insert_device_async_with_mode` with a status buffer.
    DeviceStatus,
    /// `insert_device_async_with_mode` without statuses (the partitioned path where forced).
    Device,
}

/// A table under test: a CPU one (host slices only) or a GPU one (every path).
enum Target<'a, K: Key, V: Value> {
    Cpu(&'a mut dyn HashTable<K, V>),
    Gpu(&'a mut dyn DeviceHashTable<K, V>),
}

impl<K: Key, V: Value> Target<'_, K, V> {
    fn table(&self) -> &dyn HashTable<K, V> {
        match self {
            Target::Cpu(t) => &**t,
            Target::Gpu(t) => &**t,
        }
    }
}

/// Inserts one batch as `path` says and checks the statuses where there are any: no failure, a
/// key present before UPDATED at every row, a new key new at exactly one row.
#[allow(clippy::too_many_arguments)]
fn apply<K: Key, V: Value>(
    name: &str,
    target: &mut Target<'_, K, V>,
    path: Path,
    before: &HashMap<K, V>,
    keys: &[K],
    values: &[V],
    op: Reduce,
) {
    let mode = InsertMode::Apply(op);
    let statuses: Option<Vec<InsertStatus>> = match (path, target) {
        (Path::Host, t) => {
            let mut st = vec![InsertStatus::default(); keys.len()];
            let r = match t {
                Target::Cpu(t) => t.insert_with_mode(keys, values, &mut st, mode),
                Target::Gpu(t) => t.insert_with_mode(keys, values, &mut st, mode),
            };
            let failed = r.unwrap_or_else(|e| panic!("{name}: insert_with_mode: {e}"));
            assert_eq!(failed, 0, "{name}: keys not placed");
            Some(st)
        }
        (Path::DeviceStatus, Target::Gpu(d)) => {
            let gpu = d.gpu().clone();
            let (dk, dv) = (gpu.upload(keys).unwrap(), gpu.upload(values).unwrap());
            let mut ds = gpu.alloc::<u32>(keys.len()).unwrap();
            d.insert_device_async_with_mode(&dk, &dv, Some(&mut ds), mode)
                .unwrap_or_else(|e| panic!("{name}: device insert: {e}"));
            d.synchronize()
                .unwrap_or_else(|e| panic!("{name}: synchronize: {e}"));
            Some(
                gpu.download(&ds)
                    .unwrap()
                    .into_iter()
                    .map(InsertStatus)
                    .collect(),
            )
        }
        (Path::Device, Target::Gpu(d)) => {
            let gpu = d.gpu().clone();
            let (dk, dv) = (gpu.upload(keys).unwrap(), gpu.upload(values).unwrap());
            d.insert_device_async_with_mode(&dk, &dv, None, mode)
                .unwrap_or_else(|e| panic!("{name}: device insert: {e}"));
            d.synchronize()
                .unwrap_or_else(|e| panic!("{name}: synchronize: {e}"));
            None
        }
        (_, Target::Cpu(_)) => panic!("{name}: a device path needs a device table"),
    };
    if let Some(st) = statuses {
        let mut new_rows: HashMap<K, usize> = HashMap::new();
        for (i, (k, s)) in keys.iter().zip(&st).enumerate() {
            assert!(!s.is_failure(), "{name}: row {i} (key {k:?}) failed: {s:?}");
            if before.contains_key(k) {
                assert!(s.was_update(), "{name}: row {i}: a present key not UPDATED");
            } else if !s.was_update() {
                *new_rows.entry(*k).or_default() += 1;
            }
        }
        let new_keys: std::collections::HashSet<K> = keys
            .iter()
            .filter(|k| !before.contains_key(k))
            .copied()
            .collect();
        assert_eq!(
            new_rows.len(),
            new_keys.len(),
            "{name}: some new keys have no row that stored them"
        );
        assert!(
            new_rows.values().all(|&n| n == 1),
            "{name}: a new key stored by more than one row"
        );
    }
}

/// Two batches of rows reduced into a table (the second into the values the first left), each
/// checked against the oracle.
fn two_batches<K: Key, V: Small>(
    name: &str,
    mut target: Target<'_, K, V>,
    path: Path,
    op: Reduce,
    seed: u64,
) {
    let mut rng = SplitMix64::new(seed);
    let universe = unique_keys::<K>(&mut rng, 600, true);
    let mut oracle = HashMap::new();
    for round in 0..2 {
        let (keys, values) = rows::<K, V>(&mut rng, &universe[..300 + 300 * round], 4000);
        let what = format!("{name} {op:?} {path:?} round {round}");
        apply(&what, &mut target, path, &oracle, &keys, &values, op);
        oracle = fold(&oracle, &keys, &values, op);
        assert_matches(&what, target.table(), &oracle);
    }
}

fn cpu_case<K: Key, V: Small>() {
    for (i, op) in OPS.into_iter().enumerate() {
        let name = format!("CpuTable<{}, {}>", K::NAME, V::NAME);
        let mut t = CpuTable::<K, V>::new(4096).unwrap();
        two_batches::<K, V>(&name, Target::Cpu(&mut t), Path::Host, op, 11 + i as u64);
    }
}

#[test]
fn cpu_backend_reduces_every_numeric_type() {
    cpu_case::<u32, u32>();
    cpu_case::<u32, i32>();
    cpu_case::<u32, f32>();
    cpu_case::<u64, u64>();
    cpu_case::<u64, i64>();
    cpu_case::<u64, f64>();
    cpu_case::<[u8; 16], u32>();
}

/// Every path and reduction on WarpDrive tables of these widths (a fresh table each), the
/// device batch without statuses with the partition forced on.
fn gpu_case<K: Key, V: Small>(group: u32) {
    let Some(gpu) = gpu() else { return };
    let paths = [Path::Host, Path::DeviceStatus, Path::Device];
    for (i, op) in OPS.into_iter().enumerate() {
        for (j, path) in paths.into_iter().enumerate() {
            let config = WarpDriveConfig::new(4096)
                .group_size(group)
                .locality(LocalityMode::On);
            let mut t = warpdrive::<K, V>(&gpu, config);
            let name = format!("WarpDrive<{}, {}> g{group}", K::NAME, V::NAME);
            let seed = 100 + 10 * i as u64 + j as u64;
            two_batches::<K, V>(&name, Target::Gpu(&mut t), path, op, seed);
        }
    }
}

#[test]
fn warpdrive_packed_layout_reduces() {
    gpu_case::<u32, u32>(4);
    gpu_case::<u32, i32>(1);
    gpu_case::<u32, f32>(8);
}

#[test]
fn warpdrive_pair_layout_reduces() {
    gpu_case::<u64, u64>(4);
    gpu_case::<u64, i64>(2);
    gpu_case::<u64, f64>(4);
    gpu_case::<u32, u64>(8);
    gpu_case::<u64, f32>(4);
}

#[test]
fn warpdrive_tagged_layout_reduces() {
    gpu_case::<[u8; 16], u32>(4);
    gpu_case::<[u8; 16], f64>(8);
}

/// A count per key: `Sum` of ones, the group-by's COUNT(*).
#[test]
fn counting_is_a_sum_of_ones() {
    let mut rng = SplitMix64::new(7);
    let universe = unique_keys::<u32>(&mut rng, 100, true);
    let keys: Vec<u32> = (0..5000)
        .map(|_| universe[rng.index(universe.len())])
        .collect();
    let mut expected: HashMap<u32, u32> = HashMap::new();
    for &k in &keys {
        *expected.entry(k).or_default() += 1;
    }
    let ones = vec![1u32; keys.len()];
    let mut cpu = CpuTable::<u32, u32>::new(256).unwrap();
    cpu.insert_or_apply(&keys, &ones, Reduce::Sum).unwrap();
    assert_matches("CpuTable count", &cpu, &expected);
    if let Some(gpu) = gpu() {
        let mut t = warpdrive::<u32, u32>(&gpu, WarpDriveConfig::new(256));
        t.insert_or_apply(&keys, &ones, Reduce::Sum).unwrap();
        assert_matches("WarpDrive count", &t, &expected);
    }
}

fn assert_unsupported(what: &str, r: warpmap::Result<()>) {
    match r {
        Err(Error::Unsupported(_)) => {}
        other => panic!("{what}: expected Unsupported, got {other:?}"),
    }
}

#[test]
fn refusals_before_anything_is_inserted() {
    let mut cpu = CpuTable::<u32, [u8; 8]>::new(16).unwrap();
    assert_unsupported(
        "CpuTable with byte values",
        cpu.insert_or_apply(&[1], &[[0; 8]], Reduce::Sum),
    );
    assert_eq!(cpu.len().unwrap(), 0);
    let mut two = TwoLevelCpu::<u32, u32>::new(TwoLevelConfig::new(1024)).unwrap();
    assert_unsupported("TwoLevelCpu", two.insert_or_apply(&[1], &[1], Reduce::Max));
    assert_eq!(two.len().unwrap(), 0);
    let Some(gpu) = gpu() else { return };
    let mut wd = warpdrive::<u32, [u8; 8]>(&gpu, WarpDriveConfig::new(16));
    assert_unsupported(
        "WarpDrive with byte values",
        wd.insert_or_apply(&[1], &[[0; 8]], Reduce::Sum),
    );
    assert_eq!(wd.len().unwrap(), 0);
    let mut dc = DyCuckoo::<u32, u32>::new(gpu.clone(), DyCuckooConfig::new(1024)).unwrap();
    assert_unsupported("DyCuckoo", dc.insert_or_apply(&[1], &[1], Reduce::Sum));
    let (dk, dv) = (gpu.upload(&[1u32]).unwrap(), gpu.upload(&[1u32]).unwrap());
    assert_unsupported(
        "DyCuckoo device",
        dc.insert_device_async_with_mode(&dk, &dv, None, InsertMode::Apply(Reduce::Min)),
    );
    assert_eq!(dc.len().unwrap(), 0);
}

/// The side path under contention: batches of nothing but the two sentinel keys (every row a
/// copy), counted by `Sum` of ones and reduced by `Max`, many times over, on each layout with
/// sentinels (packed u32 pairs, the pair layout): each count must be exact, each maximum right.
#[test]
fn sentinel_keys_reduce_under_contention() {
    fn case<K: Key, V: Small>(gpu: &std::sync::Arc<warpmap::Gpu>, group: u32) {
        let [a, b] = sentinel_keys::<K>();
        let mut rng = SplitMix64::new(5);
        for round in 0..20 {
            let name = format!("WarpDrive<{}, {}> g{group} round {round}", K::NAME, V::NAME);
            let mut t = warpdrive::<K, V>(gpu, WarpDriveConfig::new(64).group_size(group));
            let keys: Vec<K> = (0..20_000)
                .map(|i| if i % 3 == 0 { a } else { b })
                .collect();
            // A small whole value of every type (1 for the signed ones, 1.0 for f32), so that the
            // sums are exact (the GPU's float atomics flush subnormals to zero).
            let ones: Vec<V> = keys.iter().map(|_| V::small(501)).collect();
            t.insert_or_apply(&keys, &ones, Reduce::Sum)
                .unwrap_or_else(|e| panic!("{name}: sum: {e}"));
            let sums = fold(&HashMap::new(), &keys, &ones, Reduce::Sum);
            assert_eq!(
                t.find(&[a, b]).unwrap(),
                vec![sums.get(&a).copied(), sums.get(&b).copied()],
                "{name}: counts"
            );
            let vals: Vec<V> = keys.iter().map(|_| V::small(rng.next_u64())).collect();
            let mut t = warpdrive::<K, V>(gpu, WarpDriveConfig::new(64).group_size(group));
            t.insert_or_apply(&keys, &vals, Reduce::Max)
                .unwrap_or_else(|e| panic!("{name}: max: {e}"));
            let oracle = fold(&HashMap::new(), &keys, &vals, Reduce::Max);
            assert_eq!(
                t.find(&[a, b]).unwrap(),
                vec![oracle.get(&a).copied(), oracle.get(&b).copied()],
                "{name}: maxima"
            );
        }
    }
    let Some(gpu) = gpu() else { return };
    case::<u32, u32>(&gpu, 4);
    case::<u32, f32>(&gpu, 1);
    case::<u64, u64>(&gpu, 8);
    case::<u64, f64>(&gpu, 4);
}

/// Every backend of the registry on this machine (the CPU ones always, the GPU ones with a GPU,
/// the sharded ones included): a table that reduces by key ends as the oracle says, and one that
/// does not refuses with `Unsupported` and stays empty. Which is which: WarpDrive, the CPU
/// backend, and sharded tables of those reduce (each key lives in one shard).
#[test]
fn every_backend_reduces_or_refuses() {
    let mut rng = SplitMix64::new(3);
    let universe = unique_keys::<u64>(&mut rng, 200, true);
    let (keys, values) = rows::<u64, u64>(&mut rng, &universe, 2000);
    let oracle = fold(&HashMap::new(), &keys, &values, Reduce::Sum);
    for (name, mut t) in backends::<u64, u64>(4096) {
        // "scheme/label", a sharded one "sharded/inner/label" or "sharded_cpu/inner/label".
        let mut parts = name.split('/');
        let scheme = match parts.next() {
            Some("sharded" | "sharded_cpu") => parts.next(),
            other => other,
        };
        let reduces = matches!(scheme, Some("cpu" | "warpdrive"));
        match t.insert_or_apply(&keys, &values, Reduce::Sum) {
            Ok(()) => {
                assert!(reduces, "{name}: reduced by key, but is not meant to");
                assert_matches(&name, t.as_ref(), &oracle);
            }
            Err(Error::Unsupported(_)) => {
                assert!(!reduces, "{name}: refused to reduce by key");
                assert_eq!(t.len().unwrap(), 0, "{name}: a refusal inserted keys");
            }
            Err(e) => panic!("{name}: {e}"),
        }
    }
}
