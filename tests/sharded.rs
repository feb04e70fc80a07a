//! The sharded table's own behaviour (the contract tests run every body on it too, through the
//! registry's `sharded` and `sharded_cpu` entries):
//! - the capacity rule and its inverse, on the host;
//! - every shard holds exactly the keys its partition function gives it (host and GPU);
//! - the split on the GPU equals its host twin exactly (it is stable), for 1 to 256 shards,
//!   keys of 4, 8 and 16 bytes, with values and operations; and its inverse brings results
//!   back into input order, leaving what it should alone;
//! - device-resident batches (the `DeviceHashTable` calls) in place (one rank), through the
//!   copy exchange (two ranks on one GPU) and with NCCL (feature `nccl`; its transfers on
//!   machines of several GPUs, where every configuration also runs over all of them),
//!   against a `HashMap` oracle, statuses included;
//! - a shard filled to the brim reports its keys, per key and as `TableFull`, while the other
//!   shards keep taking keys;
//! - the split that also orders each shard's keys by its table's stretches puts every key in
//!   its shard in that order, and shards that take their keys in that order (WarpDrive's
//!   ordered kernels), of one rank or of several (the parts that stay in place beside the
//!   exchanged ones), give the oracle's results.

mod common;

use common::*;
use std::collections::HashMap;
use warpmap::hash::HashFunction;
use warpmap::sharded::split::{split, unsplit, Keep, MAX_SHARDS};
use warpmap::sharded::Transport;
use warpmap::sharded::{shard_capacity, sharded_capacity, ShardedConfig, ShardedMap};
use warpmap::status::InsertStatus;
use warpmap::table::engine::multisplit::{multisplit_host, PartFunction};
use warpmap::table::registry::TableConfig;
use warpmap::{DeviceHashTable, Error, Gpu, HashTable, Key, MixedOp, WarpDriveConfig};

#[test]
fn the_capacity_rule_and_its_inverse_agree() {
    for shards in [1usize, 2, 3, 8, 64, 256] {
        for total in [0usize, 1, 10, 1000, 4095, 1 << 20, (1 << 27) + 5] {
            let each = shard_capacity(total, shards);
            let back = sharded_capacity(each, shards);
            assert!(back >= total, "{shards} shards, {total}: back {back}");
            assert!(shard_capacity(back, shards) <= each, "{shards}, {total}");
            assert!(
                shard_capacity(back + 1, shards) > each,
                "{shards}, {total}: not the largest"
            );
        }
    }
    // The margin is small for big tables: under 0.2 % at 2^27 keys over 8 shards.
    let each = shard_capacity(1 << 27, 8) as f64;
    assert!(each / ((1u64 << 24) as f64) < 1.002);
}

/// Every shard holds the keys the partition function assigns to it, and no others.
fn check_shard_contents<K: Key>(name: &str, map: &ShardedMap<K, u32>, keys: &[K]) {
    let mut want = vec![0usize; map.shards()];
    for k in keys {
        want[map.partition().part_of(k) as usize] += 1;
    }
    assert_eq!(map.shard_lens().unwrap(), want, "{name}: keys per shard");
}

fn gpu_configs() -> Vec<(&'static str, ShardedConfig)> {
    let wd = || TableConfig::WarpDrive(WarpDriveConfig::new(0));
    #[allow(unused_mut)]
    let mut v = vec![
        ("warpdrive/1x1", ShardedConfig::new(0, wd())),
        (
            "warpdrive/1x5",
            ShardedConfig::new(0, wd()).shards_per_rank(5),
        ),
        (
            "warpdrive/3x2",
            ShardedConfig::new(0, wd())
                .ranks_per_gpu(3)
                .shards_per_rank(2),
        ),
        (
            "warpdrive/3x2/copy",
            ShardedConfig::new(0, wd())
                .ranks_per_gpu(3)
                .shards_per_rank(2)
                .transport(Transport::Copy),
        ),
    ];
    // NCCL's own start-up probes kernels for other GPUs, which compute-sanitizer reports.
    #[cfg(feature = "nccl")]
    if std::env::var_os("WARPMAP_SANITIZER").is_none() {
        v.push((
            "warpdrive/1x3/nccl",
            ShardedConfig::new(0, wd())
                .shards_per_rank(3)
                .transport(Transport::Nccl),
        ));
        v.push((
            "warpdrive/1x3/nccl-group",
            ShardedConfig::new(0, wd())
                .shards_per_rank(3)
                .transport(Transport::NcclGroup),
        ));
    }
    v
}

/// The GPU sets the GPU cases run on: GPU 0 alone, and every GPU of the machine where it has
/// several (the multi-GPU runs: every shard's exchange then crosses GPUs).
fn gpu_sets() -> Vec<(String, Vec<std::sync::Arc<Gpu>>)> {
    let Some(gpu) = gpu() else { return Vec::new() };
    let mut sets = vec![(String::new(), vec![gpu])];
    let count = Gpu::count().unwrap_or(1);
    if count > 1 {
        let all = (0..count)
            .map(|i| {
                if i == 0 {
                    Gpu::default_gpu()
                } else {
                    Gpu::new(i)
                }
            })
            .collect::<Result<Vec<_>, _>>()
            .expect("every GPU of the machine opens");
        sets.push((format!(" on {count} GPUs"), all));
    }
    sets
}

/// A sharded map of every GPU configuration on every GPU set, of `capacity` keys (`skip`: the
/// configurations to leave out).
fn gpu_maps<K: Key, V: warpmap::Value>(
    capacity: usize,
    skip: &[&str],
) -> Vec<(String, ShardedMap<K, V>)> {
    let mut maps = Vec::new();
    for (set, gpus) in gpu_sets() {
        for (name, c) in gpu_configs() {
            if skip.contains(&name) {
                continue;
            }
            let c = ShardedConfig { capacity, ..c };
            let map = ShardedMap::new(c, &gpus).unwrap_or_else(|e| panic!("{name}{set}: {e}"));
            maps.push((format!("{name}{set}"), map));
        }
    }
    maps
}

#[test]
fn shards_hold_their_partition() {
    let mut rng = SplitMix64::new(11);
    let keys = unique_keys::<u64>(&mut rng, 20_000, true);
    let values: Vec<u32> = keys.iter().map(|&k| value_for(k, 0)).collect();
    let cpu = ShardedConfig::new(30_000, TableConfig::Cpu { shards: None }).shards_per_rank(7);
    let mut maps = vec![(
        "cpu/7".to_string(),
        ShardedMap::<u64, u32>::new(cpu, &[]).unwrap(),
    )];
    maps.extend(gpu_maps(30_000, &[]));
    for (name, mut map) in maps {
        map.insert(&keys, &values).unwrap();
        check_shard_contents(&name, &map, &keys);
        assert_eq!(map.len().unwrap(), keys.len(), "{name}");
    }
}

/// The GPU split equals the stable host twin, and the inverse puts results back.
#[test]
fn split_equals_the_host_twin_and_unsplit_inverts_it() {
    let Some(gpu) = gpu() else { return };
    fn one<K: Key>(gpu: &Gpu, keys: &[K], parts: u32, hash: HashFunction) {
        let what = format!(
            "{} keys of {} bytes in {parts} parts ({hash:?})",
            keys.len(),
            K::BYTES
        );
        let f = PartFunction::new(parts, 0x1234_5678).hash(hash);
        let values: Vec<u32> = (0..keys.len() as u32).collect();
        let ops: Vec<u8> = (0..keys.len()).map(|i| (i % 3) as u8).collect();
        let (dk, dv, dops) = (
            gpu.upload(keys).unwrap(),
            gpu.upload(&values).unwrap(),
            gpu.upload(&ops).unwrap(),
        );
        // Without positions, the inverse is refused.
        let bare = split(gpu, gpu, &f, None, &dk, Some(&dv), None, false).unwrap();
        let mut o = gpu.alloc::<u32>(keys.len()).unwrap();
        let err = unsplit(
            gpu,
            &f,
            &bare.plan,
            &dk,
            Keep::Nothing,
            None,
            Some((&dv, &mut o)),
            None,
        )
        .unwrap_err();
        assert!(matches!(err, Error::InvalidInput(_)), "{what}: {err}");
        let sb = split(gpu, gpu, &f, None, &dk, Some(&dv), Some(&dops), true).unwrap();
        let (want_keys, want_values, want_offsets) =
            multisplit_host(keys, Some(&values), &f).unwrap();
        assert_eq!(sb.plan.offsets, want_offsets, "{what}: offsets");
        assert_eq!(gpu.download(&sb.keys).unwrap(), want_keys, "{what}: keys");
        let got_values = gpu.download(sb.values.as_ref().unwrap()).unwrap();
        assert_eq!(got_values, want_values.unwrap(), "{what}: values");
        let got_ops = gpu.download(sb.ops.as_ref().unwrap()).unwrap();
        for (j, &i) in got_values.iter().enumerate() {
            assert_eq!(got_ops[j], ops[i as usize], "{what}: operation {i}");
        }
        // The inverse: statuses / values / found flags computed in split order come back to
        // the input order. Values made from the split's own payload: value i lands at i.
        let n = keys.len();
        let status_split: Vec<u32> = got_values.iter().map(|&i| i ^ 0xabcd).collect();
        let found_split: Vec<u8> = got_values.iter().map(|&i| (i % 2) as u8).collect();
        let (ds, df) = (
            gpu.upload(&status_split).unwrap(),
            gpu.upload(&found_split).unwrap(),
        );
        let dvs = sb.values.as_ref().unwrap();
        let mut out_s = gpu.alloc_filled::<u32>(n, 0xee).unwrap();
        let mut out_v = gpu.alloc_filled::<u32>(n, 0xee).unwrap();
        let mut out_f = gpu.alloc_filled::<u8>(n, 0xee).unwrap();
        unsplit(
            gpu,
            &f,
            &sb.plan,
            &dk,
            Keep::Nothing,
            Some((&ds, &mut out_s)),
            Some((dvs, &mut out_v)),
            Some((&df, &mut out_f)),
        )
        .unwrap();
        let (s, v, fl) = (
            gpu.download(&out_s).unwrap(),
            gpu.download(&out_v).unwrap(),
            gpu.download(&out_f).unwrap(),
        );
        for i in 0..n {
            assert_eq!(v[i], i as u32, "{what}: value back at {i}");
            assert_eq!(s[i], i as u32 ^ 0xabcd, "{what}: status back at {i}");
            assert_eq!(fl[i], (i % 2) as u8, "{what}: found back at {i}");
        }
        // Keep: values only where found; by operation (0 insert: status; 1 find: values where
        // found, found; 2 erase: found).
        let mut out_v = gpu.alloc_filled::<u32>(n, 0xee).unwrap();
        unsplit::<K, u32>(
            gpu,
            &f,
            &sb.plan,
            &dk,
            Keep::ValuesWhereMissing,
            None,
            Some((dvs, &mut out_v)),
            Some((&df, &mut gpu.alloc::<u8>(n).unwrap())),
        )
        .unwrap();
        let v = gpu.download(&out_v).unwrap();
        for (i, &x) in v.iter().enumerate() {
            let want = if i % 2 == 1 { i as u32 } else { 0xeeee_eeee };
            assert_eq!(x, want, "{what}: values where found, at {i}");
        }
        let mut out_s = gpu.alloc_filled::<u32>(n, 0xee).unwrap();
        let mut out_v = gpu.alloc_filled::<u32>(n, 0xee).unwrap();
        let mut out_f = gpu.alloc_filled::<u8>(n, 0xee).unwrap();
        let split_ops = sb.ops.as_ref().unwrap();
        unsplit(
            gpu,
            &f,
            &sb.plan,
            &dk,
            Keep::ByOperation(split_ops),
            Some((&ds, &mut out_s)),
            Some((dvs, &mut out_v)),
            Some((&df, &mut out_f)),
        )
        .unwrap();
        let (s, v, fl) = (
            gpu.download(&out_s).unwrap(),
            gpu.download(&out_v).unwrap(),
            gpu.download(&out_f).unwrap(),
        );
        for i in 0..n {
            let (op, found) = (ops[i], i % 2 == 1);
            let st = if op == 0 {
                i as u32 ^ 0xabcd
            } else {
                0xeeee_eeee
            };
            let va = if op == 1 && found {
                i as u32
            } else {
                0xeeee_eeee
            };
            let fo = if op != 0 { (i % 2) as u8 } else { 0xee };
            assert_eq!(
                (s[i], v[i], fl[i]),
                (st, va, fo),
                "{what}: by operation at {i} (op {op})"
            );
        }
    }
    let mut rng = SplitMix64::new(5);
    for n in [0usize, 1, 31, 4095, 4097, 70_001] {
        for parts in [1u32, 2, 3, 8, 100, MAX_SHARDS as u32] {
            let k4: Vec<u32> = (0..n).map(|_| rng.key()).collect();
            one(&gpu, &k4, parts, HashFunction::Murmur3);
            let k8: Vec<u64> = (0..n).map(|_| rng.key()).collect();
            one(&gpu, &k8, parts, HashFunction::Mueller);
        }
        let k16: Vec<[u8; 16]> = (0..n).map(|_| rng.key()).collect();
        one(&gpu, &k16, 5, HashFunction::Murmur3);
    }
}

/// The split with an order within each shard (the engine's counting split, not stable): each
/// shard's range holds exactly its keys, in the order of the `within` function's parts, each
/// key with its value; the shards' offsets as without it; the inverse puts results back.
#[test]
fn split_within_shards_orders_each_shard() {
    let Some(gpu) = gpu() else { return };
    let mut rng = SplitMix64::new(21);
    for (n, shards, within) in [
        (0usize, 8u32, 16u32),
        (1, 2, 4),
        (4097, 8, 16),
        (70_001, 8, 32),
        (70_001, 3, 5),
        (300_000, 4, 256),
    ] {
        let what = format!("{n} keys, {shards} shards x {within}");
        let keys: Vec<u64> = (0..n).map(|_| rng.key()).collect();
        let values: Vec<u32> = (0..n as u32).collect();
        let f = PartFunction::new(shards, 0x1234_5678);
        let w = PartFunction::new(within, 0x9abc);
        let (dk, dv) = (gpu.upload(&keys).unwrap(), gpu.upload(&values).unwrap());
        let sb = split(&gpu, &gpu, &f, Some(&w), &dk, Some(&dv), None, true).unwrap();
        let (_, _, want_offsets) = multisplit_host::<u64, u32>(&keys, None, &f).unwrap();
        assert_eq!(sb.plan.offsets, want_offsets, "{what}: shard offsets");
        let got_keys = gpu.download(&sb.keys).unwrap();
        let got_values = gpu.download(sb.values.as_ref().unwrap()).unwrap();
        let mut seen = vec![false; n];
        for s in 0..shards as usize {
            let range = want_offsets[s] as usize..want_offsets[s + 1] as usize;
            let mut last = 0;
            for j in range {
                let (k, i) = (got_keys[j], got_values[j] as usize);
                assert_eq!(k, keys[i], "{what}: key {j} travels with its value");
                assert!(!seen[i], "{what}: key {i} twice");
                seen[i] = true;
                assert_eq!(f.part_of(&k) as usize, s, "{what}: key {i} in shard {s}");
                let p = w.part_of(&k);
                assert!(
                    p >= last,
                    "{what}: shard {s} in the order of its parts at {j}"
                );
                last = p;
            }
        }
        let mut back = gpu.alloc_filled::<u32>(n, 0xee).unwrap();
        let split_values = sb.values.as_ref().unwrap();
        unsplit(
            &gpu,
            &f,
            &sb.plan,
            &dk,
            Keep::Nothing,
            None,
            Some((split_values, &mut back)),
            None,
        )
        .unwrap();
        assert_eq!(
            gpu.download(&back).unwrap(),
            values,
            "{what}: back in input order"
        );
        // A find's results (values where found, and the found flags) back in input order;
        // and 32-byte values (moved 16 bytes at a time).
        let found_split: Vec<u8> = got_values.iter().map(|&i| (i % 3 == 0) as u8).collect();
        let df = gpu.upload(&found_split).unwrap();
        let mut back = gpu.alloc_filled::<u32>(n, 0xee).unwrap();
        let mut back_found = gpu.alloc_filled::<u8>(n, 0xee).unwrap();
        unsplit(
            &gpu,
            &f,
            &sb.plan,
            &dk,
            Keep::ValuesWhereMissing,
            None,
            Some((split_values, &mut back)),
            Some((&df, &mut back_found)),
        )
        .unwrap();
        let (v, fl) = (
            gpu.download(&back).unwrap(),
            gpu.download(&back_found).unwrap(),
        );
        for i in 0..n {
            let found = i % 3 == 0;
            let want = if found { i as u32 } else { 0xeeee_eeee };
            assert_eq!(
                (v[i], fl[i]),
                (want, found as u8),
                "{what}: find's results at {i}"
            );
        }
        let wide_split: Vec<[u32; 8]> = got_values.iter().map(|&i| [i; 8]).collect();
        let dw = gpu.upload(&wide_split).unwrap();
        let mut back_wide = gpu.alloc_filled::<[u32; 8]>(n, 0xee).unwrap();
        unsplit(
            &gpu,
            &f,
            &sb.plan,
            &dk,
            Keep::Nothing,
            None,
            Some((&dw, &mut back_wide)),
            None,
        )
        .unwrap();
        let wide = gpu.download(&back_wide).unwrap();
        for (i, w) in wide.iter().enumerate() {
            assert_eq!(*w, [i as u32; 8], "{what}: a 32-byte value back at {i}");
        }
    }
    // More than 1024 parts in all, two hash functions, or operations: refused.
    let dk = gpu.upload(&[1u64, 2, 3]).unwrap();
    let (f, w) = (PartFunction::new(8, 1), PartFunction::new(256, 2));
    let refused = split::<u64, u32>(&gpu, &gpu, &f, Some(&w), &dk, None, None, false);
    assert!(
        matches!(refused, Err(Error::InvalidInput(_))),
        "more than 1024 parts"
    );
    let w = PartFunction::new(4, 2).hash(HashFunction::Mueller);
    let refused = split::<u64, u32>(&gpu, &gpu, &f, Some(&w), &dk, None, None, false);
    assert!(
        matches!(refused, Err(Error::InvalidInput(_))),
        "two hash functions"
    );
    let (w, ops) = (PartFunction::new(4, 2), gpu.upload(&[0u8, 1, 2]).unwrap());
    let refused = split::<u64, u32>(&gpu, &gpu, &f, Some(&w), &dk, None, Some(&ops), false);
    assert!(matches!(refused, Err(Error::InvalidInput(_))), "operations");
}

/// Shards on one GPU whose tables take their keys in stretch order (WarpDrive with locality
/// on): device inserts without statuses (copies of keys, sentinel keys), finds and contains go
/// through the ordered kernels, with the oracle's results and the same contents as shards in
/// input order.
#[test]
fn ordered_shards_against_an_oracle() {
    let Some(gpu) = gpu() else { return };
    use warpmap::table::warpdrive::LocalityMode;
    // (ranks on the GPU, shards per rank, group size, exchange): with several ranks, each
    // shard works on every rank's part in place (peer), or on its own rank's part in place and
    // on the other ranks' parts as they come through the exchange (copy), each in its order.
    let (peer, copy) = (Transport::Peer, Transport::Copy);
    for (ranks, shards, g, transport) in [
        (1usize, 8usize, 4u32, peer),
        (1, 5, 1, peer),
        (1, 3, 8, peer),
        (1, 4, 16, peer),
        (3, 2, 4, peer),
        (3, 2, 4, copy),
        (2, 1, 8, peer),
        (2, 1, 8, copy),
    ] {
        let name = format!("{ranks} ranks x {shards} shards, g{g}, {transport:?}");
        let config = |m: LocalityMode| {
            let wd = WarpDriveConfig::new(0).group_size(g).locality(m);
            ShardedConfig::new(80_000, TableConfig::WarpDrive(wd))
                .ranks_per_gpu(ranks)
                .shards_per_rank(shards)
                .transport(transport)
        };
        let gpus = std::slice::from_ref(&gpu);
        let mut map = ShardedMap::<u32, u32>::new(config(LocalityMode::On), gpus).unwrap();
        let mut plain = ShardedMap::<u32, u32>::new(config(LocalityMode::Off), gpus).unwrap();
        let mut rng = SplitMix64::new(shards as u64 * 7 + g as u64);
        let unique = unique_keys::<u32>(&mut rng, 40_000, true);
        let mut keys: Vec<u32> = unique.clone();
        keys.extend(unique.iter().step_by(7)); // copies with other values
        let values: Vec<u32> = (0..keys.len() as u32)
            .map(|i| i.wrapping_mul(2654435761))
            .collect();
        let (dk, dv) = (gpu.upload(&keys).unwrap(), gpu.upload(&values).unwrap());
        for m in [&mut map, &mut plain] {
            m.insert_device_async(&dk, &dv, None).unwrap();
            m.synchronize().unwrap();
        }
        let mut oracle: HashMap<u32, Vec<u32>> = HashMap::new();
        for (&k, &v) in keys.iter().zip(&values) {
            oracle.entry(k).or_default().push(v);
        }
        assert_eq!(map.len().unwrap(), unique.len(), "{name}: len");
        let stored = contents(&name, &map);
        for (k, vs) in &oracle {
            let v = stored.get(k).unwrap_or_else(|| panic!("{name}: {k} lost"));
            assert!(
                vs.contains(v),
                "{name}: {k} holds {v}, not one of its values"
            );
        }
        let mut queries: Vec<u32> = unique.iter().copied().step_by(2).collect();
        queries.extend(
            unique_keys::<u32>(&mut SplitMix64::new(4242), 30_000, false)
                .into_iter()
                .filter(|k| !oracle.contains_key(k)),
        );
        let dq = gpu.upload(&queries).unwrap();
        let poison = 0x5a5a_5a5au32;
        let mut dvals = gpu.upload(&vec![poison; queries.len()]).unwrap();
        let mut dfound = gpu.alloc_filled::<u8>(queries.len(), 7).unwrap();
        map.find_device(&dq, &mut dvals, &mut dfound).unwrap();
        let mut dcont = gpu.alloc_filled::<u8>(queries.len(), 7).unwrap();
        map.contains_device_async(&dq, &mut dcont).unwrap();
        map.synchronize().unwrap();
        let (vals, found, cont) = (
            gpu.download(&dvals).unwrap(),
            gpu.download(&dfound).unwrap(),
            gpu.download(&dcont).unwrap(),
        );
        for (i, q) in queries.iter().enumerate() {
            match stored.get(q) {
                Some(v) => assert_eq!((found[i], vals[i], cont[i]), (1, *v, 1), "{name}: find {q}"),
                None => assert_eq!(
                    (found[i], vals[i], cont[i]),
                    (0, poison, 0),
                    "{name}: miss {q}"
                ),
            }
        }
        let mut a: Vec<u32> = stored.keys().copied().collect();
        let mut b: Vec<u32> = contents(&name, &plain).keys().copied().collect();
        a.sort_unstable();
        b.sort_unstable();
        assert_eq!(a, b, "{name}: the same keys as shards in input order");

        // The host pipeline (chunks of 7000 keys) takes the same path for inserts without
        // statuses, finds and contains.
        let mut piped =
            ShardedMap::<u32, u32>::new(config(LocalityMode::On).pipeline_batch(7000), gpus)
                .unwrap();
        piped.insert(&keys, &values).unwrap();
        assert_eq!(piped.len().unwrap(), unique.len(), "{name}: piped len");
        let got = piped.find(&queries).unwrap();
        let has = piped.contains(&queries).unwrap();
        let piped_stored = contents(&name, &piped);
        for (i, q) in queries.iter().enumerate() {
            let want = oracle.get(q).map(|_| piped_stored[q]);
            assert_eq!(got[i], want, "{name}: piped find {q}");
            assert_eq!(has[i], want.is_some(), "{name}: piped contains {q}");
            if let Some(v) = want {
                assert!(
                    oracle[q].contains(&v),
                    "{name}: piped {q} holds one of its values"
                );
            }
        }
    }
}

/// Device-resident batches on rank 0: inserts with statuses (new, updated), finds (values of
/// misses left alone), contains, erases and a retrieve, against an oracle.
#[test]
fn device_batches_against_an_oracle() {
    let Some(gpu) = gpu() else { return };
    for (name, mut map) in gpu_maps::<u64, u64>(50_000, &[]) {
        let name = name.as_str();
        let mut rng = SplitMix64::new(77);
        let keys = unique_keys::<u64>(&mut rng, 30_000, true);
        let (first, second) = keys.split_at(20_000);
        let values: Vec<u64> = first.iter().map(|&k| value_for(k, 0)).collect();
        let (dk, dv) = (gpu.upload(first).unwrap(), gpu.upload(&values).unwrap());
        let mut ds = gpu.alloc_filled::<u32>(first.len(), 0xff).unwrap();
        map.insert_device_async(&dk, &dv, Some(&mut ds)).unwrap();
        map.synchronize().unwrap();
        let st = gpu.download(&ds).unwrap();
        for (i, &s) in st.iter().enumerate() {
            let s = InsertStatus(s);
            assert!(
                s.is_ok() && !s.was_update(),
                "{name}: first status {i}: {s:?}"
            );
        }
        // Again, half of them with new values, and the rest of the keys: updated and new.
        let mut again: Vec<u64> = first[..10_000].to_vec();
        again.extend_from_slice(second);
        let again_values: Vec<u64> = again.iter().map(|&k| value_for(k, 1)).collect();
        let (dk2, dv2) = (
            gpu.upload(&again).unwrap(),
            gpu.upload(&again_values).unwrap(),
        );
        let mut ds2 = gpu.alloc_filled::<u32>(again.len(), 0xff).unwrap();
        map.insert_device_async(&dk2, &dv2, Some(&mut ds2)).unwrap();
        map.synchronize().unwrap();
        let st2 = gpu.download(&ds2).unwrap();
        for (i, &s) in st2.iter().enumerate() {
            let s = InsertStatus(s);
            assert!(s.is_ok(), "{name}: status {i}: {s:?}");
            assert_eq!(s.was_update(), i < 10_000, "{name}: update flag of {i}");
        }
        let mut oracle: HashMap<u64, u64> = first.iter().copied().zip(values).collect();
        oracle.extend(again.iter().copied().zip(again_values));
        check_shard_contents_u64(name, &map, &keys);

        // Finds: hits and misses; misses keep the caller's value.
        let mut queries: Vec<u64> = keys.iter().copied().step_by(3).collect();
        queries.extend(unique_keys::<u64>(&mut SplitMix64::new(999), 5000, false));
        let dq = gpu.upload(&queries).unwrap();
        let poison = 0x5a5a_5a5a_5a5a_5a5au64;
        let mut dvals = gpu.upload(&vec![poison; queries.len()]).unwrap();
        let mut dfound = gpu.alloc_filled::<u8>(queries.len(), 7).unwrap();
        map.find_device(&dq, &mut dvals, &mut dfound).unwrap();
        let (vals, found) = (
            gpu.download(&dvals).unwrap(),
            gpu.download(&dfound).unwrap(),
        );
        let mut dcont = gpu.alloc_filled::<u8>(queries.len(), 7).unwrap();
        map.contains_device_async(&dq, &mut dcont).unwrap();
        map.synchronize().unwrap();
        let cont = gpu.download(&dcont).unwrap();
        for (i, q) in queries.iter().enumerate() {
            match oracle.get(q) {
                Some(v) => {
                    assert_eq!((found[i], vals[i]), (1, *v), "{name}: find {q}");
                    assert_eq!(cont[i], 1, "{name}: contains {q}");
                }
                None => {
                    assert_eq!((found[i], vals[i]), (0, poison), "{name}: miss {q}");
                    assert_eq!(cont[i], 0, "{name}: contains {q}");
                }
            }
        }
        // Erase a third (and some absent keys), then retrieve everything on the device.
        let mut gone: Vec<u64> = keys.iter().copied().skip(1).step_by(3).collect();
        gone.extend(unique_keys::<u64>(&mut SplitMix64::new(1234), 100, false));
        map.erase_device_async(&gpu.upload(&gone).unwrap()).unwrap();
        map.synchronize().unwrap();
        for k in &gone {
            oracle.remove(k);
        }
        assert_eq!(map.len().unwrap(), oracle.len(), "{name}: len after erase");
        let (rk, rv) = map.retrieve_device().unwrap();
        let got: HashMap<u64, u64> = gpu
            .download(&rk)
            .unwrap()
            .into_iter()
            .zip(gpu.download(&rv).unwrap())
            .collect();
        assert_eq!(got, oracle, "{name}: retrieved pairs");
        // Mismatched lengths are refused before anything runs.
        let short = gpu.upload(&again[..5]).unwrap();
        let err = map.insert_device_async(&dk, &short, None).unwrap_err();
        assert!(matches!(err, Error::InvalidInput(_)), "{name}: {err}");
    }
}

fn check_shard_contents_u64(name: &str, map: &ShardedMap<u64, u64>, keys: &[u64]) {
    let mut want = vec![0usize; map.shards()];
    for k in keys {
        want[map.partition().part_of(k) as usize] += 1;
    }
    assert_eq!(map.shard_lens().unwrap(), want, "{name}: keys per shard");
}

/// A device mixed batch through the exchange (slab shards run erases in mixed batches):
/// untouched outputs keep what the caller had.
#[test]
fn device_mixed_batch_through_the_exchange() {
    let Some(gpu) = gpu() else { return };
    let c = ShardedConfig::new(20_000, TableConfig::Slab(warpmap::SlabConfig::new(0)))
        .ranks_per_gpu(2)
        .shards_per_rank(2);
    let mut map = ShardedMap::<u32, u32>::new(c, std::slice::from_ref(&gpu)).unwrap();
    let mut rng = SplitMix64::new(3);
    let keys = unique_keys::<u32>(&mut rng, 9000, true);
    let (old, new) = keys.split_at(6000);
    let old_values: Vec<u32> = old.iter().map(|&k| value_for(k, 0)).collect();
    map.insert(old, &old_values).unwrap();
    // Finds of old[..3000], erases of old[3000..], inserts of `new`.
    let mut ops = vec![MixedOp::Find as u8; 3000];
    ops.extend(vec![MixedOp::Erase as u8; 3000]);
    ops.extend(vec![MixedOp::Insert as u8; 3000]);
    let mut bkeys = old.to_vec();
    bkeys.extend_from_slice(new);
    let bvals: Vec<u32> = bkeys.iter().map(|&k| value_for(k, 1)).collect();
    let n = bkeys.len();
    let (dops, dk, dv) = (
        gpu.upload(&ops).unwrap(),
        gpu.upload(&bkeys).unwrap(),
        gpu.upload(&bvals).unwrap(),
    );
    let mut ds = gpu.upload(&vec![0xdead_beefu32; n]).unwrap();
    let mut dout = gpu.upload(&vec![0x5a5a_5a5au32; n]).unwrap();
    let mut dfound = gpu.upload(&vec![9u8; n]).unwrap();
    map.mixed_device_async(&dops, &dk, &dv, &mut ds, &mut dout, &mut dfound)
        .unwrap();
    map.synchronize().unwrap();
    let (st, out, found) = (
        gpu.download(&ds).unwrap(),
        gpu.download(&dout).unwrap(),
        gpu.download(&dfound).unwrap(),
    );
    for i in 0..n {
        match i / 3000 {
            0 => {
                assert_eq!((found[i], out[i]), (1, old_values[i]), "find {i}");
                assert_eq!(st[i], 0xdead_beef, "find {i}: status untouched");
            }
            1 => {
                assert_eq!(found[i], 1, "erase {i}");
                assert_eq!(
                    (st[i], out[i]),
                    (0xdead_beef, 0x5a5a_5a5a),
                    "erase {i}: untouched"
                );
            }
            _ => {
                let s = InsertStatus(st[i]);
                assert!(s.is_ok() && !s.was_update(), "insert {i}: {s:?}");
                assert_eq!(
                    (found[i], out[i]),
                    (9, 0x5a5a_5a5a),
                    "insert {i}: untouched"
                );
            }
        }
    }
    assert_eq!(map.len().unwrap(), 6000, "3000 kept + 3000 new");
}

/// Keys that all belong to shard 0, more than it holds: they are reported per key and as
/// `TableFull`; the placed ones are there; the other shards still take keys.
#[test]
fn a_shard_filled_to_the_brim_reports_its_keys() {
    let mut maps: Vec<(String, ShardedMap<u64, u32>)> = vec![(
        "cpu/4".into(),
        ShardedMap::new(
            ShardedConfig::new(4000, TableConfig::Cpu { shards: None }).shards_per_rank(4),
            &[],
        )
        .unwrap(),
    )];
    maps.extend(gpu_maps(4000, &["warpdrive/1x1"]));
    for (name, mut map) in maps {
        let f = *map.partition();
        let mut rng = SplitMix64::new(8);
        let mut mine = Vec::new();
        let mut others = Vec::new();
        while mine.len() < 6000 || others.len() < 500 {
            let k: u64 = rng.key();
            if k >= u64::MAX - 1 {
                continue;
            }
            if f.part_of(&k) == 0 {
                mine.push(k);
            } else if others.len() < 500 {
                others.push(k);
            }
        }
        let values: Vec<u32> = mine.iter().map(|&k| value_for(k, 0)).collect();
        let mut st = vec![InsertStatus::default(); mine.len()];
        let failed = map.insert_with_status(&mine, &values, &mut st).unwrap();
        let lens = map.shard_lens().unwrap();
        assert!(failed > 0, "{name}: shard 0 ({lens:?}) took 6000 keys");
        assert_eq!(
            lens[0],
            mine.len() - failed,
            "{name}: placed = shard 0's keys"
        );
        assert!(lens[1..].iter().all(|&l| l == 0), "{name}: {lens:?}");
        let placed: Vec<u64> = mine
            .iter()
            .zip(&st)
            .filter(|(_, s)| s.is_ok())
            .map(|(k, _)| *k)
            .collect();
        let failures = st.iter().filter(|s| s.is_failure()).count();
        assert_eq!(failures, failed, "{name}: failure statuses");
        let found = map.find(&placed).unwrap();
        assert!(
            found.iter().all(|v| v.is_some()),
            "{name}: a placed key is missing"
        );
        let err = map.insert(&mine, &values).unwrap_err();
        assert!(matches!(err, Error::TableFull { .. }), "{name}: {err}");
        let ov: Vec<u32> = others.iter().map(|&k| value_for(k, 0)).collect();
        map.insert(&others, &ov)
            .unwrap_or_else(|e| panic!("{name}: other shards refused keys: {e}"));
    }
}

/// Batches held across the ranks (`insert_ranks_async`, `find_ranks_async`: each rank's keys on
/// its own GPU, split there side by side): every key in its shard, each rank's answers in its
/// keys' order, a rank without keys, a key sent by two ranks, and refused inputs.
#[test]
fn per_rank_batches_against_an_oracle() {
    for (name, mut map) in gpu_maps::<u64, u64>(60_000, &[]) {
        let ranks = map.ranks().to_vec();
        let r = ranks.len();
        let mut rng = SplitMix64::new(4242);
        let keys = unique_keys::<u64>(&mut rng, 40_000, true);
        // Rank i takes an even piece, the last rank none (where there are several), and the
        // first key again at the end of the last piece that has keys (the same value: both
        // copies agree).
        let with_keys = if r > 1 { r - 1 } else { 1 };
        let each = keys.len().div_ceil(with_keys);
        let mut pieces: Vec<Vec<u64>> = (0..r)
            .map(|i| keys.iter().copied().skip(i * each).take(each).collect())
            .collect();
        if r > 1 {
            pieces[r - 1].clear();
        }
        pieces[with_keys - 1].push(keys[0]);
        let value = |k: u64| value_for(k, 3);
        let dk: Vec<_> = pieces
            .iter()
            .zip(&ranks)
            .map(|(p, g)| g.upload(p).unwrap())
            .collect();
        let dv: Vec<_> = pieces
            .iter()
            .zip(&ranks)
            .map(|(p, g)| {
                g.upload(&p.iter().map(|&k| value(k)).collect::<Vec<_>>())
                    .unwrap()
            })
            .collect();
        let kr: Vec<_> = dk.iter().collect();
        let vr: Vec<_> = dv.iter().collect();
        map.insert_ranks_async(&kr, &vr)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        map.synchronize().unwrap();
        assert_eq!(map.len().unwrap(), keys.len(), "{name}: len");
        check_shard_contents_u64(&name, &map, &keys);

        // Finds per rank: each rank asks a third of the keys and some absent ones.
        let absent = unique_keys::<u64>(&mut SplitMix64::new(31), 3000, false);
        let queries: Vec<Vec<u64>> = (0..r)
            .map(|i| {
                let mut q: Vec<u64> = keys.iter().copied().skip(i).step_by(3).collect();
                q.extend(absent.iter().copied().skip(i).step_by(r));
                q
            })
            .collect();
        let poison = 0x5a5a_5a5a_5a5a_5a5au64;
        let dq: Vec<_> = queries
            .iter()
            .zip(&ranks)
            .map(|(q, g)| g.upload(q).unwrap())
            .collect();
        let mut dvals: Vec<_> = queries
            .iter()
            .zip(&ranks)
            .map(|(q, g)| g.upload(&vec![poison; q.len()]).unwrap())
            .collect();
        let mut dfound: Vec<_> = queries
            .iter()
            .zip(&ranks)
            .map(|(q, g)| g.alloc_filled::<u8>(q.len(), 7).unwrap())
            .collect();
        {
            let qr: Vec<_> = dq.iter().collect();
            let mut vr: Vec<_> = dvals.iter_mut().collect();
            let mut fr: Vec<_> = dfound.iter_mut().collect();
            map.find_ranks_async(&qr, &mut vr, &mut fr)
                .unwrap_or_else(|e| panic!("{name}: {e}"));
        }
        map.synchronize().unwrap();
        let present: std::collections::HashSet<u64> = keys.iter().copied().collect();
        for (i, q) in queries.iter().enumerate() {
            let g = &ranks[i];
            let (vals, found) = (
                g.download(&dvals[i]).unwrap(),
                g.download(&dfound[i]).unwrap(),
            );
            for (j, k) in q.iter().enumerate() {
                let want = if present.contains(k) {
                    (1, value(*k))
                } else {
                    (0, poison)
                };
                assert_eq!(
                    (found[j], vals[j]),
                    want,
                    "{name}: rank {i} query {j} ({k})"
                );
            }
        }

        // Refused before anything runs: another number of batches, other lengths.
        let e = map
            .insert_ranks_async(&kr[..r - 1], &vr[..r - 1])
            .unwrap_err();
        assert!(matches!(e, Error::InvalidInput(_)), "{name}: {e}");
        let short: Vec<_> = ranks.iter().map(|g| g.upload(&[1u64]).unwrap()).collect();
        let sr: Vec<_> = short.iter().collect();
        if pieces.iter().any(|p| p.len() != 1) {
            let e = map.insert_ranks_async(&kr, &sr).unwrap_err();
            assert!(matches!(e, Error::InvalidInput(_)), "{name}: {e}");
        }
        // A rank's buffer on another GPU than the rank's.
        if let Some(other) = ranks.iter().position(|g| g.ordinal() != ranks[0].ordinal()) {
            let mut wrong: Vec<_> = ranks.iter().map(|g| g.upload(&[7u64]).unwrap()).collect();
            wrong[other] = ranks[0].upload(&[7u64]).unwrap();
            let wr: Vec<_> = wrong.iter().collect();
            let e = map.insert_ranks_async(&wr, &sr).unwrap_err();
            assert!(matches!(e, Error::InvalidInput(_)), "{name}: {e}");
        }
        assert_eq!(map.len().unwrap(), keys.len(), "{name}: len after refusals");
    }
}

#[test]
fn bad_configurations_are_refused() {
    let cpu = || TableConfig::Cpu { shards: None };
    for c in [
        ShardedConfig::new(10, cpu()).shards_per_rank(0),
        ShardedConfig::new(10, cpu()).shards_per_rank(MAX_SHARDS + 1),
        ShardedConfig::new(10, TableConfig::Sharded(ShardedConfig::new(10, cpu()))),
    ] {
        let e = ShardedMap::<u32, u32>::new(c.clone(), &[]).err();
        assert!(matches!(e, Some(Error::InvalidInput(_))), "{c:?}: {e:?}");
    }
    let e = ShardedMap::<u32, u32>::new(
        ShardedConfig::new(10, TableConfig::WarpDrive(WarpDriveConfig::new(10))),
        &[],
    )
    .err();
    assert!(matches!(e, Some(Error::NoDevice { .. })), "{e:?}");
}
