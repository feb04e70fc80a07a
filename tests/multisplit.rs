//! The multisplit pass on the GPU (src/table/engine/multisplit.rs, kernels/multisplit.cu)
//! against its CPU twin (`multisplit_host`, the same part function in Rust): for parts
//! m ∈ {1, 2, 7, 64, 1000, 1025, 5000, 100 000, 2^20}, keys of 4, 8 and 16 bytes, with and
//! without values, several batch sizes (empty, less than a warp, ragged tails, a million), both
//! hashes, and both methods (claiming and counting, one and two passes). Checked each time: the
//! offsets (per-part counts) equal the twin's, every key lies in its own part, the output is a
//! permutation of the input, and every value travels with its key. The split is not stable, so
//! order within a part is not compared. GPU only (skipped without one, unless
//! `WARPMAP_REQUIRE_GPU=1`).

mod common;

use common::*;
use std::time::Instant;
use warpmap::hash::HashFunction;
use warpmap::table::engine::multisplit::{
    multisplit_by, multisplit_host, multisplit_keys, multisplit_slack_async, multisplit_using,
    multisplit_within_indexed, slack_cap, Method, PartFunction, SlackItems, SlackLayout,
    SlackScatter, Split, DEFAULT_PART_SEED,
};
use warpmap::{Gpu, Key};

/// 5000 and 100 000: as many parts as the two-level table has buckets (a warp's keys rarely
/// share one). Up to 1024 the counting split takes one pass, from 1025 two; 2^20 is the most
/// two passes serve.
const PARTS: [u32; 9] = [1, 2, 7, 64, 1000, 1025, 5000, 100_000, 1 << 20];

/// Both methods.
const METHODS: [Method; 2] = [Method::Claiming, Method::Counting];

/// Batch sizes: empty, under a warp, ragged tails, and a million (16 Ki under compute-sanitizer,
/// which slows every access).
fn sizes() -> [usize; 6] {
    let big = if sanitized() {
        (1 << 14) + 7
    } else {
        (1 << 20) + 7
    };
    [0, 1, 31, 33, 1000, big]
}

/// Whether the binary runs under compute-sanitizer (run.sh sets WARPMAP_SANITIZER).
fn sanitized() -> bool {
    std::env::var_os("WARPMAP_SANITIZER").is_some()
}

/// Checks one device split of `keys` (values: the input positions) against the twin.
fn check<K: Key>(gpu: &Gpu, split: &Split<K, u32>, keys: &[K], f: &PartFunction, what: &str) {
    let (_, _, want_offsets) = multisplit_host::<K, u32>(keys, None, f).unwrap();
    assert_eq!(
        split.offsets, want_offsets,
        "{what}: offsets (per-part counts)"
    );
    let got = gpu.download(&split.keys).unwrap();
    assert_eq!(got.len(), keys.len(), "{what}: length");
    for p in 0..f.parts as usize {
        let (a, b) = (split.offsets[p] as usize, split.offsets[p + 1] as usize);
        for (j, k) in got[a..b].iter().enumerate() {
            assert_eq!(
                f.part_of(k),
                p as u32,
                "{what}: key at {} is not of part {p}",
                a + j
            );
        }
    }
    match &split.values {
        Some(v) => {
            // Values are the input positions: each appears once, and beside its own key.
            let v = gpu.download(v).unwrap();
            let mut seen = vec![false; keys.len()];
            for (j, &i) in v.iter().enumerate() {
                let i = i as usize;
                assert!(
                    i < keys.len() && !seen[i],
                    "{what}: value {i} twice or out of range"
                );
                seen[i] = true;
                assert_eq!(got[j], keys[i], "{what}: value {i} moved without its key");
            }
        }
        None => {
            let (mut a, mut b) = (got.clone(), keys.to_vec());
            a.sort_unstable();
            b.sort_unstable();
            assert!(a == b, "{what}: not a permutation of the input");
        }
    }
}

fn run_all<K: Key>(label: &str) {
    let Some(gpu) = gpu() else { return };
    let mut rng = SplitMix64::new(0x5_0001 ^ K::BYTES as u64);
    for n in sizes() {
        // Random keys with duplicates (a quarter drawn from a small pool), so equal keys meet
        // in one warp too.
        let pool: Vec<K> = (0..64).map(|_| rng.key::<K>()).collect();
        let keys: Vec<K> = (0..n)
            .map(|_| {
                if rng.chance(0.25) {
                    pool[rng.index(pool.len())]
                } else {
                    rng.key::<K>()
                }
            })
            .collect();
        let positions: Vec<u32> = (0..n as u32).collect();
        let dk = gpu.upload(&keys).unwrap();
        let dv = gpu.upload(&positions).unwrap();
        for &m in &PARTS {
            for (hash, method) in HashFunction::ALL
                .into_iter()
                .flat_map(|h| METHODS.map(|m| (h, m)))
            {
                let f = PartFunction::new(m, DEFAULT_PART_SEED ^ n as u64).hash(hash);
                let what = format!("{label}, n {n}, parts {m}, {hash:?}, {method:?}");
                let split = multisplit_using(&gpu, &dk, Some(&dv), &f, method).unwrap();
                check(&gpu, &split, &keys, &f, &format!("{what}, with values"));
                if hash == HashFunction::Murmur3 {
                    let s = multisplit_using::<K, K>(&gpu, &dk, None, &f, method).unwrap();
                    let s = Split::<K, u32> {
                        keys: s.keys,
                        values: None,
                        offsets: s.offsets,
                        device_offsets: s.device_offsets,
                    };
                    check(&gpu, &s, &keys, &f, &format!("{what}, keys only"));
                }
            }
        }
    }
    println!(
        "{label}: {} batch sizes x {} part counts x 2 hashes x 2 methods checked against the CPU twin",
        sizes().len(),
        PARTS.len()
    );
}

#[test]
fn multisplit_4_byte_keys() {
    run_all::<u32>("u32");
}

#[test]
fn multisplit_8_byte_keys() {
    run_all::<u64>("u64");
}

#[test]
fn multisplit_16_byte_keys() {
    run_all::<u128>("u128");
    run_all::<[u8; 16]>("[u8; 16]");
}

/// The counting split in one pass (7 parts) and two (5000), on one small batch: quick enough
/// for compute-sanitizer's racecheck, which the tiles' shared memory is for.
/// The indexed split (`multisplit_within_indexed`, one outer part, so the parts are the inner
/// function's): its values are the batch indices, written by the split itself, so `check`'s
/// test of values as input positions holds; for keys of 4, 8 and 16 bytes, batch sizes from
/// empty to a million, 1 to 1024 parts (one pass), both hashes.
#[test]
fn indexed_split_carries_the_batch_indices() {
    fn run<K: Key>(label: &str) {
        let Some(gpu) = gpu() else { return };
        let mut rng = SplitMix64::new(0x1_d3ed ^ K::BYTES as u64);
        for n in sizes() {
            let keys: Vec<K> = (0..n).map(|_| rng.key::<K>()).collect();
            let dk = gpu.upload(&keys).unwrap();
            for m in [1u32, 7, 128, 1024] {
                for hash in HashFunction::ALL {
                    let outer = PartFunction::new(1, 3).hash(hash);
                    let within = PartFunction::new(m, DEFAULT_PART_SEED ^ n as u64).hash(hash);
                    let split =
                        multisplit_within_indexed(&gpu, &gpu, &dk, &outer, &within, true).unwrap();
                    let what = format!("{label}, n {n}, parts {m}, {hash:?}, indexed");
                    check(&gpu, &split, &keys, &within, &what);
                }
            }
        }
    }
    run::<u32>("4-byte keys");
    run::<u64>("8-byte keys");
    run::<u128>("16-byte keys");
}

#[test]
fn counting_split_small() {
    let Some(gpu) = gpu() else { return };
    let mut rng = SplitMix64::new(0x5_0002);
    let keys: Vec<u32> = (0..20_011).map(|_| rng.key::<u32>()).collect();
    let positions: Vec<u32> = (0..keys.len() as u32).collect();
    let dk = gpu.upload(&keys).unwrap();
    let dv = gpu.upload(&positions).unwrap();
    for m in [7, 5000] {
        let f = PartFunction::new(m, DEFAULT_PART_SEED);
        let split = multisplit_using(&gpu, &dk, Some(&dv), &f, Method::Counting).unwrap();
        check(
            &gpu,
            &split,
            &keys,
            &f,
            &format!("small counting split, {m} parts"),
        );
    }
}

/// Wide values (128 and 256 bytes) travel with their keys; keys uploaded on another stream.
/// With 512 threads a counting tile stages one pair of 8 + 128 bytes a thread; pairs of
/// 8 + 256 bytes do not fit and are written from registers.
#[test]
fn wide_values_and_another_stream() {
    wide_values::<[u8; 128]>();
    wide_values::<[u8; 256]>();
}

fn wide_values<V: warpmap::Value + PartialEq + std::fmt::Debug>() {
    let Some(gpu) = gpu() else { return };
    let other = gpu.with_new_stream().unwrap();
    let mut rng = SplitMix64::new(77);
    let n = 100_003;
    let keys: Vec<u64> = (0..n).map(|_| rng.next_u64()).collect();
    let values: Vec<V> = keys.iter().map(|&k| V::from_bits(k)).collect();
    let dk = other.upload(&keys).unwrap();
    let dv = other.upload(&values).unwrap();
    // 7 parts: one counting pass; 5000: two; 7 by claims too.
    let splits: Vec<_> = [
        (7, Method::Counting),
        (5000, Method::Counting),
        (7, Method::Claiming),
    ]
    .into_iter()
    .map(|(m, method)| {
        let f = PartFunction::new(m, 1234);
        let split = multisplit_using(&gpu, &dk, Some(&dv), &f, method).unwrap();
        (f, method, split)
    })
    .collect();
    drop((dk, dv)); // freed on `other` after the split's kernels (the device layer orders it)
    for (f, method, split) in splits {
        let what = format!("{} parts, {method:?}, {}", f.parts, V::NAME);
        let (_, _, want) = multisplit_host::<u64, V>(&keys, None, &f).unwrap();
        assert_eq!(split.offsets, want, "{what}");
        let got_k = gpu.download(&split.keys).unwrap();
        let got_v = gpu.download(split.values.as_ref().unwrap()).unwrap();
        for (j, (k, v)) in got_k.iter().zip(&got_v).enumerate() {
            assert_eq!(*v, V::from_bits(*k), "{what}");
            let p = f.part_of(k) as usize;
            assert!(want[p] <= j as u64 && (j as u64) < want[p + 1], "{what}");
        }
        let mut a = got_k.clone();
        let mut b = keys.clone();
        a.sort_unstable();
        b.sort_unstable();
        assert_eq!(a, b, "{what}: not a permutation");
    }
}

/// Invalid part counts are refused before anything runs.
#[test]
fn invalid_parts_are_refused() {
    let Some(gpu) = gpu() else { return };
    let dk = gpu.upload(&[1u64, 2, 3]).unwrap();
    for m in [0, u32::MAX] {
        let e = multisplit_keys(&gpu, &dk, m, 1).unwrap_err();
        assert!(matches!(e, warpmap::Error::InvalidInput(_)), "{e}");
    }
    let dv = gpu.upload(&[1u32]).unwrap();
    let e = multisplit_by(&gpu, &dk, Some(&dv), &PartFunction::new(2, 1)).unwrap_err();
    assert!(matches!(e, warpmap::Error::InvalidInput(_)), "{e}");
}

/// The rate of a split of 2^24 u64 keys with u64 values (printed; checked once).
#[test]
fn multisplit_rate_measured() {
    let Some(gpu) = gpu() else { return };
    if sanitized() {
        return; // a rate under compute-sanitizer means nothing
    }
    let n = 1usize << 24;
    let mut rng = SplitMix64::new(9);
    let keys: Vec<u64> = (0..n).map(|_| rng.next_u64()).collect();
    let dk = gpu.upload(&keys).unwrap();
    let dv = gpu.upload(&keys).unwrap();
    for m in [2u32, 8, 64, 256, 1000, 5000, 100_000] {
        for method in METHODS {
            let f = PartFunction::new(m, DEFAULT_PART_SEED);
            let _warm = multisplit_using(&gpu, &dk, Some(&dv), &f, method).unwrap();
            let mut best = f64::MAX;
            for _ in 0..3 {
                let t = Instant::now();
                let s = multisplit_using(&gpu, &dk, Some(&dv), &f, method).unwrap();
                best = best.min(t.elapsed().as_secs_f64());
                assert_eq!(s.offsets[m as usize], n as u64);
            }
            println!(
                "multisplit of {n} u64 keys + u64 values into {m} parts, {method:?}: {:.2} ms \
                 (host-timed, allocation and offset read-back included), {:.2} G keys/s",
                best * 1e3,
                n as f64 / best / 1e9
            );
        }
    }
}

/// The split with slack (`multisplit_slack_async`, the partitioned insert's): every key of the
/// batch is either in its own part's region (within the region's fill) or flagged, exactly
/// once, with its value beside it; the flagged count is the flags' number. Batches of random
/// keys (nothing flagged at these sizes) and skewed ones (half the batch one key: its part's
/// region fills and the rest of its copies are flagged), parts 1 to 1024, tiles of 1024 and
/// 1536 items; keys and values in two arrays (`SlackLayout::Columns`, 4-, 8- and 16-byte keys
/// with 4-byte values), and as `{key, value}` pairs (`SlackLayout::Pairs`: 4- and 8-byte keys
/// with values of their width).
#[test]
fn slack_split_places_every_key_once() {
    fn run<K: Key, V: Key + Into<u64> + TryFrom<u64>>(
        gpu: &std::sync::Arc<Gpu>,
        layout: SlackLayout,
        label: &str,
    ) {
        let mut rng = SplitMix64::new(0x51ac ^ K::BYTES as u64);
        let big = if sanitized() { 1 << 14 } else { (1 << 20) + 7 };
        for n in [1usize, 31, 1000, big] {
            for skewed in [false, true] {
                let hot = rng.key::<K>();
                let keys: Vec<K> = (0..n)
                    .map(|i| {
                        if skewed && i % 2 == 0 {
                            hot
                        } else {
                            rng.key::<K>()
                        }
                    })
                    .collect();
                let positions: Vec<V> = (0..n as u64)
                    .map(|i| V::try_from(i).ok().expect("positions fit the values"))
                    .collect();
                let (dk, dv) = (gpu.upload(&keys).unwrap(), gpu.upload(&positions).unwrap());
                for (parts, unit) in [(1, 1024), (7, 1536), (128, 1024), (1024, 1024)] {
                    let what =
                        format!("{label}, n {n}, skewed {skewed}, {parts} parts, unit {unit}");
                    let f = PartFunction::new(parts, DEFAULT_PART_SEED ^ n as u64);
                    // Columns through the one-call form, pairs through a prepared scatter.
                    let s = match layout {
                        SlackLayout::Columns => {
                            multisplit_slack_async(gpu, &dk, Some(&dv), &f, unit).unwrap()
                        }
                        SlackLayout::Pairs => {
                            SlackScatter::prepare::<K, V>(gpu, n, true, &f, unit, layout)
                                .unwrap()
                                .map(|scatter| scatter.split_async(gpu, &dk, Some(&dv), &f))
                                .transpose()
                                .unwrap()
                        }
                    }
                    .expect("one pass serves up to 1024 parts");
                    assert_eq!(
                        matches!(s.items, SlackItems::Pairs(_)),
                        layout == SlackLayout::Pairs,
                        "{what}: the layout asked for"
                    );
                    assert_eq!(s.cap, slack_cap(n as u64, parts, unit), "{what}: cap");
                    assert_eq!(s.cap % unit, 0, "{what}: whole units");
                    let (got_k, got_v) = s.download(gpu).unwrap();
                    let got_v = got_v.expect("a split with values returns them");
                    let fill = gpu.download(&s.fill).unwrap();
                    let flagged = gpu.download(&s.flagged).unwrap();
                    assert_eq!(got_k.len() as u64, parts as u64 * s.cap, "{what}: regions");
                    assert_eq!(got_v.len(), got_k.len(), "{what}: a value a key");
                    let mut seen = vec![false; n];
                    let mut count = vec![0u64; parts as usize];
                    for k in &keys {
                        count[f.part_of(k) as usize] += 1;
                    }
                    for p in 0..parts as usize {
                        assert_eq!(fill[p], count[p], "{what}: part {p}'s claims");
                        let start = p as u64 * s.cap;
                        for j in start..start + fill[p].min(s.cap) {
                            let k = got_k[j as usize];
                            let i = Into::<u64>::into(got_v[j as usize]) as usize;
                            assert!(i < n && !seen[i], "{what}: item {i} twice or out of range");
                            seen[i] = true;
                            assert_eq!(k, keys[i], "{what}: item {i} moved without its key");
                            assert_eq!(f.part_of(&k), p as u32, "{what}: item {i} in part {p}");
                        }
                    }
                    let mut flags = 0u64;
                    for (i, s) in seen.iter_mut().enumerate() {
                        if (flagged[i / 32] >> (i % 32)) & 1 == 1 {
                            assert!(!*s, "{what}: item {i} placed and flagged");
                            *s = true;
                            flags += 1;
                        }
                    }
                    assert!(
                        seen.iter().all(|&s| s),
                        "{what}: an item neither placed nor flagged"
                    );
                    assert_eq!(fill[parts as usize], flags, "{what}: flagged count");
                    // The scatter zeroes the bitmap itself: no bit past the batch's end.
                    if n % 32 != 0 {
                        assert_eq!(
                            flagged[n / 32] >> (n % 32),
                            0,
                            "{what}: bits past the batch"
                        );
                    }
                    if !skewed && n > 1000 {
                        assert_eq!(flags, 0, "{what}: random keys fit their regions");
                    }
                    if skewed && n > 1000 && parts > 1 {
                        assert!(
                            flags > 0,
                            "{what}: the hot key's copies overflow its region"
                        );
                    }
                }
            }
        }
        println!("{label}: slack splits checked");
    }
    let Some(gpu) = gpu() else { return };
    let columns = SlackLayout::Columns;
    run::<u32, u32>(&gpu, columns, "4-byte keys");
    run::<u64, u32>(&gpu, columns, "8-byte keys");
    run::<u128, u32>(&gpu, columns, "16-byte keys");
    run::<u32, u32>(&gpu, SlackLayout::Pairs, "4-byte pairs");
    run::<u64, u64>(&gpu, SlackLayout::Pairs, "8-byte pairs");
}

/// The pairs layout serves keys and values of one width, 4 or 8 bytes, and nothing else: a
/// scatter of pairs for other types is refused with an error (no GPU work: refused before the
/// module is looked up).
#[test]
fn slack_pairs_serve_one_width_only() {
    assert!(SlackLayout::Pairs.serves(4, Some(4)));
    assert!(SlackLayout::Pairs.serves(8, Some(8)));
    for (k, v) in [
        (4, Some(8)),
        (8, Some(4)),
        (16, Some(16)),
        (8, None),
        (12, Some(12)),
    ] {
        assert!(!SlackLayout::Pairs.serves(k, v), "{k}-byte keys, {v:?}");
    }
    assert!(SlackLayout::Columns.serves(16, Some(4)));
    let Some(gpu) = gpu() else { return };
    let f = PartFunction::new(128, DEFAULT_PART_SEED);
    for r in [
        SlackScatter::prepare::<u64, u32>(&gpu, 1 << 12, true, &f, 1024, SlackLayout::Pairs),
        SlackScatter::prepare::<u64, u64>(&gpu, 1 << 12, false, &f, 1024, SlackLayout::Pairs),
    ] {
        assert!(matches!(r, Err(warpmap::Error::InvalidInput(_))));
    }
}

/// A prepared slack scatter (`SlackScatter`, which a table keeps between batches): batch after
/// batch of its shape, every key in its own part's region or flagged, each once, with its
/// value; a batch of another shape is refused with an error, not split wrongly. In the pairs
/// layout, as a table of 8-byte keys and values keeps it.
#[test]
fn prepared_slack_scatter_serves_its_shape_only() {
    let Some(gpu) = gpu() else { return };
    let n = if sanitized() { 1 << 13 } else { (1 << 18) + 5 };
    let (parts, unit) = (128u32, 1024u64);
    let f = PartFunction::new(parts, DEFAULT_PART_SEED);
    let pairs = SlackLayout::Pairs;
    let scatter = SlackScatter::prepare::<u64, u64>(&gpu, n, true, &f, unit, pairs)
        .unwrap()
        .expect("one pass serves 128 parts");
    assert_eq!(scatter.layout(), pairs);
    assert!(scatter.serves::<u64, u64>(n, true, &f, unit, pairs));
    assert!(!scatter.serves::<u64, u64>(n + 1, true, &f, unit, pairs));
    assert!(!scatter.serves::<u64, u64>(n, false, &f, unit, pairs));
    let f64_parts = PartFunction::new(64, DEFAULT_PART_SEED);
    assert!(!scatter.serves::<u64, u64>(n, true, &f64_parts, unit, pairs));
    assert!(!scatter.serves::<u64, u64>(n, true, &f, 1536, pairs));
    assert!(!scatter.serves::<u32, u32>(n, true, &f, unit, pairs));
    assert!(!scatter.serves::<u64, u64>(n, true, &f, unit, SlackLayout::Columns));
    let mut rng = SplitMix64::new(0x5ca7);
    for batch in 0..3 {
        let keys: Vec<u64> = (0..n).map(|_| rng.key::<u64>()).collect();
        let index: Vec<u64> = (0..n as u64).collect();
        let (dk, dv) = (gpu.upload(&keys).unwrap(), gpu.upload(&index).unwrap());
        // A new seed each batch: the seed is the split's argument, not the scatter's shape.
        let fb = PartFunction::new(parts, DEFAULT_PART_SEED ^ batch);
        let s = scatter.split_async(&gpu, &dk, Some(&dv), &fb).unwrap();
        assert!(
            matches!(s.items, SlackItems::Pairs(_)),
            "batch {batch}: pairs"
        );
        let (got_k, got_v) = s.download(&gpu).unwrap();
        let got_v = got_v.expect("a split with values returns them");
        let fill = gpu.download(&s.fill).unwrap();
        let flagged = gpu.download(&s.flagged).unwrap();
        let mut seen = vec![false; n];
        for (p, &claims) in fill.iter().take(parts as usize).enumerate() {
            let start = p as u64 * s.cap;
            for j in start..start + claims.min(s.cap) {
                let i = got_v[j as usize] as usize;
                assert!(
                    i < n && !seen[i],
                    "batch {batch}: item {i} twice or out of range"
                );
                seen[i] = true;
                assert_eq!(got_k[j as usize], keys[i], "batch {batch}: item {i}'s key");
                assert_eq!(
                    fb.part_of(&keys[i]),
                    p as u32,
                    "batch {batch}: item {i}'s part"
                );
            }
        }
        let flags = (0..n)
            .filter(|&i| (flagged[i / 32] >> (i % 32)) & 1 == 1)
            .count();
        assert_eq!(
            flags as u64, fill[parts as usize],
            "batch {batch}: flagged count"
        );
        for (i, s) in seen.iter_mut().enumerate() {
            if (flagged[i / 32] >> (i % 32)) & 1 == 1 {
                assert!(!*s, "batch {batch}: item {i} placed and flagged");
                *s = true;
            }
        }
        assert!(seen.iter().all(|&s| s), "batch {batch}: an item lost");
    }
    let other_stream = gpu.with_new_stream().unwrap();
    let (dk, dv) = (
        other_stream.upload(&vec![1u64; n]).unwrap(),
        other_stream.upload(&vec![0u64; n]).unwrap(),
    );
    assert!(matches!(
        scatter.split_async(&other_stream, &dk, Some(&dv), &f),
        Err(warpmap::Error::InvalidInput(_))
    ));
    let short = gpu.upload(&vec![1u64; n - 1]).unwrap();
    let short_v = gpu.upload(&vec![0u64; n - 1]).unwrap();
    assert!(matches!(
        scatter.split_async(&gpu, &short, Some(&short_v), &f),
        Err(warpmap::Error::InvalidInput(_))
    ));
}

/// The slack split's region sizes: whole units, room for the mean and its spread, and little
/// more at the partitioned insert's sizes.
#[test]
fn slack_caps() {
    assert_eq!(slack_cap(1, 1, 1024), 1024);
    assert_eq!(slack_cap(0, 7, 1536), 1536);
    let n = 1u64 << 27;
    let cap = slack_cap(n, 128, 1024);
    assert_eq!(cap % 1024, 0);
    let mean = n / 128;
    assert!(
        cap >= mean + 4 * 1024 && (cap as f64) < mean as f64 * 1.025,
        "{cap}"
    );
}
