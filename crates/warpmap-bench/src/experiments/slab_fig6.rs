//! Incremental insertion (slab-hash.txt §VI-B, Fig. 6): `n` keys inserted into one slab table
//! in equal batches, one launch per batch, against what a static table must do, rebuild from
//! scratch with all keys so far after every batch (WarpDrive at a fixed load factor, the
//! paper's CUDPP at 65 %). The slab table's buckets give the target memory utilisation after
//! the last batch.
//!
//! Per run (fresh keys): the keys and values uploaded once, and into one device buffer per
//! batch (untimed); the slab sequence timed as a whole (CUDA events around every launch, launch
//! gaps included), then verified (`len == n`, every key found with its value). Rebuilds (fig6
//! only): after batch `i` the first `i · batch` keys copied on the device into buffers of their
//! own and a new WarpDrive table of `ceil(i · batch / load)` slots made (untimed), its insert
//! timed alone; `len` checked after every rebuild and every key found after the last. The
//! first run also times each slab batch alone for the figure's cumulative curve.

use super::slab_report::{SlabOp, SlabRow};
use super::slab_run::{SlabCx, CALIBRATION_RUN};
use crate::harness::timing::median;
use crate::harness::verify::{bad_hits, check_len_after_insert, table_full_is_failure};
use crate::kernels::workload_source;
use crate::schemes::slab::{self, SlabInfo};
use std::sync::Arc;
use warpmap::device::{DeviceBuffer, Kernel};
use warpmap::{
    keygen, DeviceHashTable, Error, Gpu, HashTable, Key, Result, Value, WarpDrive, WarpDriveConfig,
};

const BLOCK: u32 = 256;

/// The preset: a cell per batch size, with the rebuilds.
pub(crate) fn run<K: Key, V: Value>(cx: &mut SlabCx<'_>) -> Result<()> {
    let plan = cx.plan;
    let n = plan.sizes()[0];
    let target = plan.utilizations[0];
    for (cell, &b) in plan.batch_log2.iter().enumerate() {
        incremental_cell::<K, V>(cx, "fig6", n, b, target, cell, plan.rebuild_load_factor)?;
    }
    Ok(())
}

/// `wl_copy_words`: a range of one device buffer into another.
struct RangeCopy {
    kernel: Kernel,
    grid: u32,
}

impl RangeCopy {
    fn new(gpu: &Arc<Gpu>) -> Result<Self> {
        let m = gpu.module(&workload_source())?;
        Ok(RangeCopy {
            kernel: m.kernel("wl_copy_words")?,
            grid: gpu.sm_count().max(1) * (2048 / BLOCK) * 4,
        })
    }

    /// `dst[j] = src[first + j]` for every element of `dst`.
    fn copy<T: bytemuck::Pod>(
        &self,
        src: &DeviceBuffer<T>,
        dst: &mut DeviceBuffer<T>,
        first: usize,
    ) -> Result<()> {
        let words = std::mem::size_of::<T>() / 4;
        if words * 4 != std::mem::size_of::<T>() || first + dst.len() > src.len() {
            return Err(Error::invalid(
                "range copy: out of bounds or not 4-byte elements",
            ));
        }
        let (first, n) = ((first * words) as u64, (dst.len() * words) as u64);
        let mut l = self.kernel.launch();
        l.buf(src).buf_mut(dst).arg(&first).arg(&n);
        // SAFETY: wl_copy_words(const u32* src, u32* dst, u64 first, u64 n): the arguments
        // match in order and type; T is a whole number of 32-bit words, the kernel reads
        // src[first..first + n) and writes dst[0..n) in words, both within the buffers
        // (checked above).
        unsafe { l.run(self.grid, BLOCK, 0) }
    }
}

/// The outputs of a search of every key of a run, on the device and on the host.
struct Lookups<V: Value> {
    d_out: DeviceBuffer<V>,
    d_found: DeviceBuffer<u8>,
    out: Vec<V>,
    found: Vec<u8>,
}

impl<V: Value> Lookups<V> {
    fn new(gpu: &Gpu, n: usize) -> Result<Self> {
        Ok(Lookups {
            d_out: gpu.alloc(n)?,
            d_found: gpu.alloc(n)?,
            out: vec![V::zeroed(); n],
            found: vec![0; n],
        })
    }

    /// Keys of `keys` (on the device: `dk`) that `t` does not find with `value_for(key)`
    /// (outputs poisoned first, so an unwritten one counts).
    fn bad<K: Key>(
        &mut self,
        gpu: &Gpu,
        t: &dyn DeviceHashTable<K, V>,
        dk: &DeviceBuffer<K>,
        keys: &[K],
    ) -> Result<usize> {
        gpu.fill_bytes(&mut self.d_out, 0xaa)?;
        gpu.fill_bytes(&mut self.d_found, 0xaa)?;
        t.find_device_async(dk, &mut self.d_out, &mut self.d_found)?;
        t.synchronize()?;
        gpu.copy_to_host(&self.d_found, &mut self.found)?;
        gpu.copy_to_host(&self.d_out, &mut self.out)?;
        Ok(bad_hits(keys, &self.out, &self.found))
    }
}

/// One incremental cell: `n` keys in batches of `2^batch_log2` into a slab table sized for
/// utilisation `target` at the end; with `rebuild_load`, WarpDrive rebuilt at that load after
/// every batch.
pub(crate) fn incremental_cell<K: Key, V: Value>(
    cx: &mut SlabCx<'_>,
    experiment: &'static str,
    n: usize,
    batch_log2: u32,
    target: f64,
    cell: usize,
    rebuild_load: Option<f64>,
) -> Result<()> {
    let (gpu, plan, timer) = (cx.gpu, cx.plan, cx.timer);
    let b = 1usize << batch_log2;
    let k = n / b;
    let n = k * b;
    let what = format!(
        "{experiment} {}/{} incremental {k} x 2^{batch_log2}",
        K::NAME,
        V::NAME
    );
    cx.say(format!(
        "{what}: choosing the buckets for utilisation {target}"
    ));
    let (buckets, _) = slab::calibrate::<K, V>(gpu, n, target, cx.seed(cell, CALIBRATION_RUN))?;
    let mut t = slab::make::<K, V>(gpu, n, buckets)?;
    slab::warm_up(gpu, &mut t, timer, plan.seed)?;
    let copy = RangeCopy::new(gpu)?;
    if rebuild_load.is_some() {
        let mut w = WarpDrive::<K, V>::new(gpu.clone(), WarpDriveConfig::new(1 << 16))?;
        crate::harness::timing::warm_up_device(gpu, &mut w, timer, 1 << 14, plan.seed)?;
    }

    let mut dk = gpu.alloc::<K>(n)?;
    let mut dv = gpu.alloc::<V>(n)?;
    let mut batches: Vec<(DeviceBuffer<K>, DeviceBuffer<V>)> = Vec::with_capacity(k);
    for _ in 0..k {
        batches.push((gpu.alloc::<K>(b)?, gpu.alloc::<V>(b)?));
    }
    let mut lookups = Lookups::<V>::new(gpu, n)?;
    let mut keys = vec![K::zeroed(); n];
    let mut vals = vec![V::zeroed(); n];

    let (mut slab_ms, mut slab_fail, mut utils) = (Vec::new(), Vec::new(), Vec::new());
    let (mut wd_ms, mut wd_fail, mut wd_load) = (Vec::new(), Vec::new(), 0.0);
    let (mut slab_curve, mut wd_curve) = (Vec::new(), Vec::new());
    let mut last: Option<SlabInfo> = None;
    for r in 0..plan.runs {
        cx.say(format!("{what} run {}/{}: slab", r + 1, plan.runs));
        keygen::unique_into(&mut keys, 0, cx.seed(cell, r))?;
        keygen::values_into(&keys, &mut vals)?;
        gpu.copy_to_device(&keys, &mut dk)?;
        gpu.copy_to_device(&vals, &mut dv)?;
        for (i, (bk, bv)) in batches.iter_mut().enumerate() {
            copy.copy(&dk, bk, i * b)?;
            copy.copy(&dv, bv, i * b)?;
        }

        // The sequence, timed as a whole.
        t.clear()?;
        gpu.synchronize()?;
        timer.start()?;
        for (bk, bv) in &batches {
            t.insert_device_async(bk, bv, None)?;
        }
        slab_ms.push(timer.stop_ms()?);
        table_full_is_failure(t.synchronize(), &mut slab_fail, r)?;
        slab_fail.extend(check_len_after_insert(r, t.len()?, n, n));
        let info = slab::info(&t)?;
        utils.push(info.utilization);
        last = Some(info);
        let bad = lookups.bad(gpu, &t, &dk, &keys)?;
        if bad > 0 {
            slab_fail.push(format!(
                "run {r}: {bad} of {n} keys not found (or wrong) after the batches"
            ));
        }

        // The first run: each batch alone, for the curve.
        if r == 0 {
            t.clear()?;
            let mut sum = 0.0;
            for (bk, bv) in &batches {
                timer.start()?;
                t.insert_device_async(bk, bv, None)?;
                sum += timer.stop_ms()?;
                slab_curve.push(sum);
            }
            table_full_is_failure(t.synchronize(), &mut slab_fail, r)?;
        }

        if let Some(load) = rebuild_load {
            cx.say(format!(
                "{what} run {}/{}: {k} WarpDrive rebuilds",
                r + 1,
                plan.runs
            ));
            let mut total = 0.0;
            for i in 1..=k {
                let m = i * b;
                let mut pk = gpu.alloc::<K>(m)?;
                let mut pv = gpu.alloc::<V>(m)?;
                copy.copy(&dk, &mut pk, 0)?;
                copy.copy(&dv, &mut pv, 0)?;
                let cap = (m as f64 / load).ceil() as usize;
                let mut w = WarpDrive::<K, V>::new(gpu.clone(), WarpDriveConfig::new(cap))?;
                timer.start()?;
                w.insert_device_async(&pk, &pv, None)?;
                let ms = timer.stop_ms()?;
                total += ms;
                if r == 0 {
                    wd_curve.push(total);
                }
                table_full_is_failure(w.synchronize(), &mut wd_fail, r)?;
                let len = w.len()?;
                if len != m {
                    wd_fail.push(format!("run {r} rebuild {i}: len {len} for {m} keys"));
                }
                if i == k {
                    wd_load = m as f64 / w.capacity() as f64;
                    let bad = lookups.bad(gpu, &w, &dk, &keys)?;
                    if bad > 0 {
                        wd_fail.push(format!(
                            "run {r}: {bad} of {n} keys not found after the last rebuild"
                        ));
                    }
                }
            }
            wd_ms.push(total);
        }
    }

    let mut row = SlabRow::new::<K, V>(experiment, SlabOp::Incremental, n, n, &slab_ms, slab_fail);
    row.utilization_target = Some(target);
    row.utilization = Some(median(&utils));
    row.slab = last;
    row.batch = Some(b);
    row.batches = Some(k);
    row.memory_bytes = t.memory_bytes();
    row.cumulative_ms = slab_curve;
    if rebuild_load.is_some() && !slab_ms.is_empty() {
        row.speedup = Some(median(&wd_ms) / median(&slab_ms));
    }
    cx.push(row);
    if let Some(load) = rebuild_load {
        let mut w = SlabRow::new::<K, V>(experiment, SlabOp::Rebuild, n, n, &wd_ms, wd_fail);
        w.scheme = "warpdrive";
        let load = if wd_load > 0.0 { wd_load } else { load };
        // An open-addressing table's memory utilisation is its load factor (the paper's §III-C).
        w.load_factor = Some(load);
        w.utilization = Some(load);
        w.batch = Some(b);
        w.batches = Some(k);
        w.cumulative_ms = wd_curve;
        cx.push(w);
    }
    Ok(())
}
