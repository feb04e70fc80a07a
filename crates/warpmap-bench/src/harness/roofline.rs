//! The in-run roofline: what this GPU's memory system gives to random 8-byte reads and CASes
//! (the access pattern of every hash table here) and to a streaming copy. Kernels:
//! `crates/warpmap-bench/kernels/roofline.cu` (`roofline_gather8`, `roofline_cas8`, `roofline_copy`).
//!
//! For out-of-core Stadium rows, [`measure_host_bound`] measures the bound of the bus: random
//! writes and reads of whole records (the table's key + value bytes) into pinned host memory
//! mapped into the GPU, of the size of the table's host buckets (`roofline_write_records`,
//! `roofline_read_records`). Random accesses to mapped host memory slow down as the buffer grows
//! (address translation, not bandwidth), so the bound is measured per table size, and for either
//! kind of host pages ([`HostPages`]: the driver's pinned pages, or transparent huge pages;
//! `warpmap hostbound` compares them).
//!
//! The accesses go to a table of `u64`s far larger than L2 (2^28 elements, 2 GiB, by default),
//! at indices hashed from the operation number, so no index array is read. Each kernel runs once
//! to warm up, then `runs` times between CUDA events; the median counts. Every run uses a new
//! index seed; the CAS table is reset to all ones (outside the timing) before each CAS run, so
//! every run sees the same mix of successful and failing CASes.

use super::report::{HostBound, Roofline};
use super::timing::median;
use crate::kernels::roofline_source;
use warpmap::device::MappedBuffer;
use warpmap::device::{DeviceBuffer, Gpu, Kernel};
use warpmap::hash::fmix64;
use warpmap::{Error, HostPages, Result};

const BLOCK: u32 = 256;

/// The sizes of one roofline measurement.
#[derive(Clone, Copy, Debug)]
pub struct RooflineConfig {
    /// `u64` elements of the table (and of the copy's source and destination).
    pub elements: usize,
    /// Random accesses per gather or CAS kernel.
    pub ops: u64,
    /// Timed runs per kernel (after one warm-up).
    pub runs: usize,
}

impl RooflineConfig {
    /// 2^28 elements (2 GiB), 2^28 ops, 5 runs; quick: 2^24 (128 MiB, still beyond a 50 MB
    /// L2), 2^24 ops, 3 runs.
    pub fn new(quick: bool) -> Self {
        if quick {
            RooflineConfig {
                elements: 1 << 24,
                ops: 1 << 24,
                runs: 3,
            }
        } else {
            RooflineConfig {
                elements: 1 << 28,
                ops: 1 << 28,
                runs: 5,
            }
        }
    }
}

/// The number of blocks: enough resident threads to fill every SM several times over
/// (the kernels use grid-stride loops).
fn grid(gpu: &Gpu) -> u32 {
    (gpu.sm_count().max(1) * (2048 / BLOCK) * 4).max(1)
}

fn gather(
    k: &Kernel,
    table: &DeviceBuffer<u64>,
    sink: &mut DeviceBuffer<u64>,
    n: u64,
    ops: u64,
    seed: u64,
    grid: u32,
) -> Result<()> {
    let mut l = k.launch();
    l.buf(table).arg(&n).arg(&ops).arg(&seed).buf_mut(sink);
    // SAFETY: roofline_gather8(const u64* table, u64 n, u64 n_ops, u64 seed, u64* sink): the
    // arguments match in order and type; indices are < n = table.len(); sink holds one element
    // per launched thread (grid * BLOCK, allocated by the caller).
    unsafe { l.run(grid, BLOCK, 0) }
}

fn cas(
    k: &Kernel,
    table: &mut DeviceBuffer<u64>,
    n: u64,
    ops: u64,
    seed: u64,
    grid: u32,
) -> Result<()> {
    let mut l = k.launch();
    l.buf_mut(table).arg(&n).arg(&ops).arg(&seed);
    // SAFETY: roofline_cas8(u64* table, u64 n, u64 n_ops, u64 seed): the arguments match;
    // indices are < n = table.len().
    unsafe { l.run(grid, BLOCK, 0) }
}

fn copy(k: &Kernel, src: &DeviceBuffer<u64>, dst: &mut DeviceBuffer<u64>, grid: u32) -> Result<()> {
    let n = src.len().min(dst.len()) as u64;
    let mut l = k.launch();
    l.buf(src).buf_mut(dst).arg(&n);
    // SAFETY: roofline_copy(const u64* src, u64* dst, u64 n): the arguments match; both
    // buffers hold at least n elements.
    unsafe { l.run(grid, BLOCK, 0) }
}

/// Measures the roofline. `step` is called after each of the three kernels.
pub fn measure(gpu: &Gpu, cfg: RooflineConfig, step: &mut dyn FnMut(&str)) -> Result<Roofline> {
    let module = gpu.module(&roofline_source())?;
    let k_gather = module.kernel("roofline_gather8")?;
    let k_cas = module.kernel("roofline_cas8")?;
    let k_copy = module.kernel("roofline_copy")?;
    let grid = grid(gpu);
    let n = cfg.elements as u64;
    let runs = cfg.runs.max(1);
    let timer = gpu.timer()?;
    let seed_of = |kind: u64, run: usize| fmix64(0x00c0_ffee ^ fmix64(kind ^ (run as u64) << 8));

    // Not zeros (METHOD.md): all ones, the empty-slot pattern the CAS compares with.
    let mut table = gpu.alloc_filled::<u64>(cfg.elements, 0xff)?;
    let mut sink = gpu.alloc_filled::<u64>(grid as usize * BLOCK as usize, 0)?;

    // Gather.
    let mut ms = Vec::with_capacity(runs);
    for r in 0..=runs {
        timer.start()?;
        gather(
            &k_gather,
            &table,
            &mut sink,
            n,
            cfg.ops,
            seed_of(1, r),
            grid,
        )?;
        let t = timer.stop_ms()?;
        if r > 0 {
            ms.push(t);
        }
    }
    gpu.synchronize()?;
    let gather8_gops = cfg.ops as f64 / (median(&ms) * 1e6);
    step("gather8");

    // CAS.
    ms.clear();
    for r in 0..=runs {
        gpu.fill_bytes(&mut table, 0xff)?;
        timer.start()?;
        cas(&k_cas, &mut table, n, cfg.ops, seed_of(2, r), grid)?;
        let t = timer.stop_ms()?;
        if r > 0 {
            ms.push(t);
        }
    }
    gpu.synchronize()?;
    let cas8_gops = cfg.ops as f64 / (median(&ms) * 1e6);
    step("cas8");
    drop(sink);

    // Copy: bytes read plus bytes written.
    let mut dst = gpu.alloc_filled::<u64>(cfg.elements, 0x5a)?;
    ms.clear();
    for r in 0..=runs {
        timer.start()?;
        copy(&k_copy, &table, &mut dst, grid)?;
        let t = timer.stop_ms()?;
        if r > 0 {
            ms.push(t);
        }
    }
    gpu.synchronize()?;
    let copy_gbps = 2.0 * 8.0 * cfg.elements as f64 / (median(&ms) * 1e6);
    step("copy");

    Ok(Roofline {
        gather8_gops: Some(gather8_gops),
        cas8_gops: Some(cas8_gops),
        copy_gbps: Some(copy_gbps),
        table_elements: Some(n),
        ops: Some(cfg.ops),
        runs: Some(runs),
        host_bounds: Vec::new(),
    })
}

/// Random record accesses per timed kernel of the host bound: `2^22` (quick: `2^18`), at most
/// one per record. At the bus's 0.04-0.45 G/s, 2^22 accesses take 10-100 ms.
pub fn host_bound_ops(quick: bool, records: u64) -> u64 {
    let ops: u64 = if quick { 1 << 18 } else { 1 << 22 };
    ops.min(records.max(1))
}

/// Measures the out-of-core bound for a table whose host buckets take `bytes` bytes of records
/// of `record_bytes` bytes (a multiple of 4): a mapped host buffer of that size and page kind
/// (`pages`, as [`Gpu::alloc_mapped_with`] allocates it), random record writes, then random
/// record reads, `ops` each per kernel, one warm-up then `runs` timed runs (CUDA events), the
/// median counts. The buffer is freed before returning. [`Error::InvalidInput`] for a record
/// size that is not a positive multiple of 4.
pub fn measure_host_bound(
    gpu: &Gpu,
    bytes: u64,
    record_bytes: usize,
    ops: u64,
    runs: usize,
    pages: HostPages,
) -> Result<HostBound> {
    if record_bytes == 0 || record_bytes % 4 != 0 {
        return Err(Error::invalid(format!(
            "record size {record_bytes} bytes: must be a positive multiple of 4"
        )));
    }
    let module = gpu.module(&roofline_source())?;
    let k_write = module.kernel("roofline_write_records")?;
    let k_read = module.kernel("roofline_read_records")?;
    let record_words = (record_bytes / 4) as u32;
    let records = (bytes / (4 * record_words as u64)).max(1);
    let words = usize::try_from(records * record_words as u64)
        .map_err(|_| Error::invalid(format!("host bound of {bytes} bytes")))?;
    let started = std::time::Instant::now();
    let buf: MappedBuffer<u32> = gpu.alloc_mapped_with::<u32>(words, pages)?;
    let alloc_ms = started.elapsed().as_secs_f64() * 1e3;
    let grid = grid(gpu);
    let mut sink = gpu.alloc_filled::<u64>(grid as usize * BLOCK as usize, 0)?;
    let runs = runs.max(1);
    let timer = gpu.timer()?;
    let seed_of = |kind: u64, run: usize| fmix64(0x0b05_b0d5 ^ fmix64(kind ^ (run as u64) << 8));

    let mut time = |read: bool| -> Result<f64> {
        let mut ms = Vec::with_capacity(runs);
        for r in 0..=runs {
            let seed = seed_of(u64::from(read), r);
            let mut l = if read {
                k_read.launch()
            } else {
                k_write.launch()
            };
            l.mapped(&buf)
                .arg(&records)
                .arg(&record_words)
                .arg(&ops)
                .arg(&seed);
            if read {
                l.buf_mut(&mut sink);
            }
            timer.start()?;
            // SAFETY: roofline_write_records(u32* buf, u64 n_records, u32 record_words, u64
            // n_ops, u64 seed) and roofline_read_records(the same, u64* sink): the arguments
            // match in order and type; record indices are < records and buf holds records *
            // record_words words; sink holds one element per launched thread (grid * BLOCK).
            unsafe { l.run(grid, BLOCK, 0) }?;
            let t = timer.stop_ms()?;
            if r > 0 {
                ms.push(t);
            }
        }
        gpu.synchronize()?;
        Ok(ops as f64 / (median(&ms) * 1e6))
    };
    let write_gops = time(false)?;
    let read_gops = time(true)?;
    let huge_page_bytes = buf.huge_page_bytes();
    drop(sink);
    drop(buf);
    Ok(HostBound {
        bytes: records * record_words as u64 * 4,
        record_bytes: record_words as usize * 4,
        write_gops,
        read_gops,
        ops,
        runs,
        pages,
        huge_page_bytes,
        alloc_ms,
    })
}
