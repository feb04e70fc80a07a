//! The in-run roofline: what this GPU's memory system gives to random 8-byte reads and CASes
//! (the access pattern of every hash table here) and to a streaming copy. Kernels:
//! `kernels/roofline.cu` (`roofline_gather8`, `roofline_cas8`, `roofline_copy`).
//!
//! The accesses go to a table of `u64`s far larger than L2 (2^28 elements, 2 GiB, by default),
//! at indices hashed from the operation number, so no index array is read. Each kernel runs once
//! to warm up, then `runs` times between CUDA events; the median counts. Every run uses a new
//! index seed; the CAS table is reset to all ones (outside the timing) before each CAS run, so
//! every run sees the same mix of successful and failing CASes.

use super::{median, Roofline};
use crate::device::{DeviceBuffer, Gpu, Kernel};
use crate::hash::fmix64;
use crate::kernels::{KernelSource, ROOFLINE};
use crate::Result;

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
    let module = gpu.module(&KernelSource::new("roofline", ROOFLINE))?;
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
    })
}
