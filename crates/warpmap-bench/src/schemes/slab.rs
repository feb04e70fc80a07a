//! The slab hash in the benchmark: a table of a given number of buckets (base slabs), sized for
//! a target memory utilisation (slab-hash.txt §III-C, Fig. 4c), what its rows report (its
//! [`SlabInfo`]: buckets, slabs, the measured utilisation) and its allocator's calls.
//!
//! The paper sets the utilisation through the number of buckets `B`: with `n` keys hashed
//! uniformly, a bucket holds `c ~ Poisson(n / B)` keys in `max(1, ceil(c / M))` slabs of `M = 15`
//! pairs, so the expected utilisation is `n · pair_bytes / (B · E[slabs per bucket] ·
//! slab_bytes)` ([`expected_utilization`]), decreasing in `B`; [`buckets_for`] inverts it by
//! bisection. A build then measures the real utilisation (the table's stats), and
//! [`corrected_buckets`] scales the model by what it measured (untimed, once per cell).

use std::sync::Arc;
use warpmap::device::DeviceBuffer;
use warpmap::{keygen, DeviceHashTable, Gpu, HashTable, Key, Result, Value};
use warpmap::{Slab, SlabConfig, SlabStats};

pub use warpmap::table::slab::PAIRS_PER_SLAB;

/// How far a measured utilisation may be from its target before the buckets are corrected.
pub const UTILIZATION_TOLERANCE: f64 = 0.01;

/// The sizes of a slab of `K`/`V` pairs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct SlabGeometry {
    /// Bytes of a slab (128 for 8-byte pairs, 256 otherwise).
    pub slab_bytes: usize,
    /// Bytes of a pair (key + value).
    pub pair_bytes: usize,
    /// Pairs per slab.
    pub pairs_per_slab: usize,
}

impl SlabGeometry {
    /// The library's layout for keys of `kb` and values of `vb` bytes: 32 words of 4 bytes
    /// (128-byte slabs) for 4 + 4 bytes, of 8 bytes (256-byte slabs) otherwise; 15 pairs each.
    pub fn for_widths(kb: usize, vb: usize) -> Self {
        SlabGeometry {
            slab_bytes: 32 * warpmap::table::slab::word_bytes(kb, vb),
            pair_bytes: kb + vb,
            pairs_per_slab: PAIRS_PER_SLAB,
        }
    }

    /// The geometry the table's stats report.
    pub fn of_stats(s: &SlabStats) -> Self {
        SlabGeometry {
            slab_bytes: s.slab_bytes,
            pair_bytes: s.pair_bytes,
            pairs_per_slab: PAIRS_PER_SLAB,
        }
    }

    /// The utilisation of full slabs: `pairs_per_slab · pair_bytes / slab_bytes` (15/16).
    pub fn max_utilization(&self) -> f64 {
        (self.pairs_per_slab * self.pair_bytes) as f64 / self.slab_bytes as f64
    }
}

pub use warpmap::table::slab::expected_slabs_per_bucket;

/// The expected memory utilisation of `n` keys in `buckets` buckets (the library's model:
/// [`warpmap::table::slab::expected_utilization`]).
pub fn expected_utilization(n: usize, buckets: usize, g: SlabGeometry) -> f64 {
    warpmap::table::slab::expected_utilization(n, buckets, g.pair_bytes, g.slab_bytes)
}

/// The number of buckets whose expected utilisation for `n` keys is closest to `target` (the
/// library's [`warpmap::table::slab::buckets_for_slab_utilization`]); targets at or above the
/// geometry's maximum give 1 bucket.
pub fn buckets_for(n: usize, target: f64, g: SlabGeometry) -> usize {
    warpmap::table::slab::buckets_for_slab_utilization(n, target, g.pair_bytes, g.slab_bytes)
}

/// The buckets for `target` after a build with `buckets` measured `measured`: the model scaled
/// by what it missed (`measured / expected`), then inverted again.
pub fn corrected_buckets(
    n: usize,
    target: f64,
    g: SlabGeometry,
    buckets: usize,
    measured: f64,
) -> usize {
    let model = expected_utilization(n, buckets, g);
    if !(model > 0.0 && measured > 0.0) {
        return buckets;
    }
    let scale = measured / model;
    let want = (target / scale).min(g.max_utilization() * 0.999);
    buckets_for(n, want, g)
}

/// What a slab table adds to its rows: its stats, the measured utilisation and the average
/// slab count.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct SlabInfo {
    /// The table's stats (buckets, slab and pair bytes, the pool, pairs).
    #[serde(flatten)]
    pub stats: SlabStats,
    /// The paper's memory utilisation: `pairs · pair_bytes / ((buckets + allocated_slabs) ·
    /// slab_bytes)`.
    pub utilization: f64,
    /// The average slab count `β = pairs / (15 · buckets)` (the paper's x-axis of Fig. 4c).
    pub beta: f64,
}

impl SlabInfo {
    /// From the table's stats.
    pub fn of(s: &SlabStats) -> Self {
        SlabInfo {
            stats: *s,
            utilization: s.utilization(),
            beta: s.pairs as f64 / (PAIRS_PER_SLAB * s.buckets.max(1)) as f64,
        }
    }
}

/// A table for `capacity` keys in `buckets` buckets.
pub(crate) fn make<K: Key, V: Value>(
    gpu: &Arc<Gpu>,
    capacity: usize,
    buckets: usize,
) -> Result<Slab<K, V>> {
    Slab::<K, V>::new(
        gpu.clone(),
        SlabConfig::new(capacity.max(1)).buckets(buckets.max(1)),
    )
}

/// The table's stats (synchronises).
pub(crate) fn info<K: Key, V: Value>(t: &Slab<K, V>) -> Result<SlabInfo> {
    Ok(SlabInfo::of(&t.stats()?))
}

/// A table whose allocator has at least `pool_slabs` slabs ready (the alloc preset): 1024
/// buckets, `memory_blocks` memory blocks of 1024 slabs per super block, and the super blocks
/// that hold the pool.
pub(crate) fn allocator_table(
    gpu: &Arc<Gpu>,
    pool_slabs: usize,
    memory_blocks: u32,
) -> Result<Slab<u32, u32>> {
    let per_super = memory_blocks as usize * 1024;
    let supers = pool_slabs.div_ceil(per_super).max(1) as u32;
    Slab::<u32, u32>::new(
        gpu.clone(),
        SlabConfig::new(1 << 14)
            .buckets(1024)
            .memory_blocks(memory_blocks)
            .super_blocks(supers),
    )
}

/// SlabAlloc: one slab per element of `out`, addresses written there.
pub(crate) fn allocate(t: &mut Slab<u32, u32>, out: &mut DeviceBuffer<u32>) -> Result<()> {
    t.allocate_slabs_async(out)
}

/// Frees the slabs of `addrs`.
pub(crate) fn free(t: &mut Slab<u32, u32>, addrs: &DeviceBuffer<u32>) -> Result<()> {
    t.free_slabs_async(addrs)
}

/// The buckets for `n` keys at memory utilisation `target`, from the model and one measured
/// build when the model is off by more than [`UTILIZATION_TOLERANCE`] (untimed; keys of
/// `seed`'s calibration set). Returns (buckets, the utilisation measured with them).
pub(crate) fn calibrate<K: Key, V: Value>(
    gpu: &Arc<Gpu>,
    n: usize,
    target: f64,
    seed: u64,
) -> Result<(usize, f64)> {
    let g = SlabGeometry::for_widths(K::BYTES, V::BYTES);
    let keys = keygen::unique::<K>(n, seed ^ 0xca1b_0000)?;
    let vals: Vec<V> = keygen::values_for(&keys);
    let (dk, dv) = (gpu.upload(&keys)?, gpu.upload(&vals)?);
    drop((keys, vals));
    let measure = |buckets: usize| -> Result<(f64, SlabGeometry)> {
        let mut t = make::<K, V>(gpu, n, buckets)?;
        t.insert_device_async(&dk, &dv, None)?;
        t.synchronize()?;
        let s = t.stats()?;
        Ok((s.utilization(), SlabGeometry::of_stats(&s)))
    };
    let b0 = buckets_for(n, target, g);
    let (u0, g0) = measure(b0)?;
    if (u0 - target).abs() <= UTILIZATION_TOLERANCE {
        return Ok((b0, u0));
    }
    let b1 = corrected_buckets(n, target, g0, b0, u0);
    if b1 == b0 {
        return Ok((b0, u0));
    }
    let (u1, _) = measure(b1)?;
    Ok(if (u1 - target).abs() <= (u0 - target).abs() {
        (b1, u1)
    } else {
        (b0, u0)
    })
}

/// Every kernel of the table once on a small batch, then cleared (the mixed kernel too, where
/// the GPU runs it).
pub(crate) fn warm_up<K: Key, V: Value>(
    gpu: &Arc<Gpu>,
    t: &mut Slab<K, V>,
    timer: &warpmap::device::Timer,
    seed: u64,
) -> Result<()> {
    crate::harness::timing::warm_up_device(gpu, t, timer, 1 << 12, seed)?;
    let n = 1usize << 10;
    let keys = keygen::unique::<K>(n, seed ^ 0x3c3c)?;
    let vals: Vec<V> = keygen::values_for(&keys);
    let ops: Vec<u8> = (0..n).map(|i| (i % 3) as u8).collect();
    let (dops, dk, dv) = (gpu.upload(&ops)?, gpu.upload(&keys)?, gpu.upload(&vals)?);
    let mut st = gpu.alloc::<u32>(n)?;
    let mut out = gpu.alloc::<V>(n)?;
    let mut found = gpu.alloc::<u8>(n)?;
    // Pairs of 8-byte words mix only on sm_90 and newer: nothing to warm up elsewhere.
    match t.mixed_device_async(&dops, &dk, &dv, &mut st, &mut out, &mut found) {
        Ok(()) | Err(warpmap::Error::Unsupported(_)) => {}
        Err(e) => return Err(e),
    }
    t.synchronize()?;
    t.clear()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geometry_of_the_two_layouts() {
        let g = SlabGeometry::for_widths(4, 4);
        assert_eq!((g.slab_bytes, g.pair_bytes, g.pairs_per_slab), (128, 8, 15));
        assert!((g.max_utilization() - 0.9375).abs() < 1e-12);
        let g = SlabGeometry::for_widths(8, 8);
        assert_eq!((g.slab_bytes, g.pair_bytes), (256, 16));
        assert!((g.max_utilization() - 0.9375).abs() < 1e-12);
        assert_eq!(SlabGeometry::for_widths(4, 8).slab_bytes, 256);
    }

    #[test]
    fn poisson_slab_counts() {
        // Tiny loads: one slab per bucket.
        assert!((expected_slabs_per_bucket(1e-9, 15) - 1.0).abs() < 1e-6);
        assert_eq!(expected_slabs_per_bucket(0.0, 15), 1.0);
        // Large loads: about lambda / 15 + 1/2 slabs.
        let l = 1500.0;
        let s = expected_slabs_per_bucket(l, 15);
        assert!((s - (l / 15.0 + 0.5)).abs() < 0.05, "{s}");
        // Monotone in the load.
        let mut prev = 0.0;
        for i in 1..200 {
            let s = expected_slabs_per_bucket(i as f64 * 0.5, 15);
            assert!(s >= prev - 1e-12);
            prev = s;
        }
    }

    #[test]
    fn the_papers_fig4c_point() {
        // β = n / (15 B) = 0.7 gives about 60 % (the paper's Fig. 5 setting).
        let g = SlabGeometry::for_widths(4, 4);
        let n = 1 << 22;
        let b = (n as f64 / (15.0 * 0.7)).round() as usize;
        let u = expected_utilization(n, b, g);
        assert!((u - 0.61).abs() < 0.02, "{u}");
        // Low β: every bucket one slab, u = λ·8/128.
        let u = expected_utilization(n, n, g);
        assert!((u - 0.0625).abs() < 1e-6, "{u}");
    }

    #[test]
    fn buckets_invert_the_model() {
        let g = SlabGeometry::for_widths(4, 4);
        for n in [1usize << 16, 1 << 22, 1 << 24] {
            let mut prev = usize::MAX;
            for u in [0.2, 0.3, 0.4, 0.5, 0.6, 0.615, 0.65, 0.7, 0.8, 0.9] {
                let b = buckets_for(n, u, g);
                let got = expected_utilization(n, b, g);
                assert!(
                    (got - u).abs() < 0.005,
                    "n {n} target {u}: {b} buckets give {got}"
                );
                // More utilisation, fewer buckets.
                assert!(b <= prev, "n {n} u {u}");
                prev = b;
            }
        }
        // Out of reach: one bucket.
        assert_eq!(buckets_for(1000, 0.99, g), 1);
    }

    #[test]
    fn correction_follows_the_measurement() {
        let g = SlabGeometry::for_widths(4, 4);
        let n = 1 << 22;
        let b = buckets_for(n, 0.6, g);
        // The measurement agrees with the model: no change.
        let same = corrected_buckets(n, 0.6, g, b, expected_utilization(n, b, g));
        assert!((same as f64 / b as f64 - 1.0).abs() < 0.01);
        // The table measured less than the model (extra slabs): fewer buckets.
        let fewer = corrected_buckets(n, 0.6, g, b, 0.55);
        assert!(fewer < b);
        // More than the model: more buckets.
        let more = corrected_buckets(n, 0.6, g, b, 0.65);
        assert!(more > b);
        // Nonsense measurements leave it.
        assert_eq!(corrected_buckets(n, 0.6, g, b, 0.0), b);
    }
}
