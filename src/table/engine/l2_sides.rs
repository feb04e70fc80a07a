//! The L2 cache's two sides: an ordered insert whose keys reach their first window from an SM on
//! that window's side of the L2.
//!
//! The L2 cache of an H100 or H200 is two partitions. Measured on an H200 (bench/probes/
//! l2_sides.cu, bench/NOTES.md, session AG): the SMs fall into two *sides* of 66; an L2 atomic
//! from an SM takes ~350 cycles to a line homed in the partition on its side and ~535 to one homed
//! in the other, and the request crosses the fabric between them (a third of the ordered
//! insert's L2 requests were such crossings). A line's side is a parity of physical address bits
//! from bit 12 up: constant over 4 KiB, but not computable from a virtual address, so the array
//! is measured. Random 16-byte read + 128-bit CAS (the insert's two requests a key) from every
//! SM ran 28.0 G/s over any line of a 32 MiB buffer and **40.3 G/s over near lines only**.
//!
//! The ordered insert can take the sides (`WARPMAP_L2_SIDES`, [`mode`]: **off by default**;
//! `on` splits by side, `synthetic` does so with made-up sides, for tests under a sanitizer,
//! `walk` runs session AG's sided walk, for measurements):
//! 1. once per GPU ([`sm_sides`]), each SM times L2 atomics to the lines of a 1 MiB scratch
//!    buffer; [`classify`] splits each SM's latencies in two (near and far), groups the SMs by
//!    the lines they find near, and checks that a side holds over whole 4 KiB granules;
//! 2. once per table array ([`TableL2Sides::measure`]), its first 1024 granules and 1 in 64 of
//!    the others are timed from SMs of known side, and a [`SideModel`] is fitted to them: the
//!    parity of in-page address bits 12-20 under a mask, and one flip per 2 MiB page (the
//!    physical bits above); timing every granule took ~18 ms for 4 GiB;
//! 3. the locality-partitioned insert's split ([`multisplit_by_side_async`](super::multisplit::multisplit_by_side_async))
//!    puts side 0's keys first, then side 1's, each in stretch order (the side of a key's first
//!    window by the model, computed per key in the split's part function), and the ordered insert
//!    kernel's blocks walk their own side's keys (`wm_for_each_ordered_by_side`,
//!    kernels/common/bulk.cuh; one tile counter a side; a side done early takes the other's
//!    tiles, so every key is inserted once whatever SMs the blocks get).
//!
//! A wrong side costs only speed: the maps never decide whether or where a key is stored.
//! Where the latencies are not two clear groups (a GPU with one L2, or noise), or no model fits
//! an array, there are no sides and the ordered insert runs as without them.
//!
//! **The walk (`walk`), measured slower:** on an H200 (2^27 u64 pairs at load 0.5,
//! bench/NOTES.md, session AG), a split by stretch only, each block picking its side's keys of
//! every tile, took the fabric's requests from 168 M to 45 M and the L2's from 512 M to 422 M,
//! but the kernel ran 7.1 ms against 6.0: picking costs every block the hash of every key of
//! the tile (instructions 1.49 G → 2.34 G). The split by side moves that choice into the split,
//! which hashes every key anyway.

use crate::device::{DeviceBuffer, Gpu, Module};
use crate::kernels::{KernelFile, KernelSource};
use crate::Result;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Bytes over which a line's side is constant (measured: bits 7-11 never flip it on an H200).
pub const GRANULE_BYTES: u64 = 4096;
/// The scratch buffer each SM times at the GPU's calibration: 1 MiB, 8192 lines.
const SCRATCH_LINES: u32 = 8192;
/// Lines of 128 bytes.
const LINE_BYTES: u64 = 128;
/// Timing warps per SM (one block per SM) at the GPU's calibration, whose SMs then vote on each
/// line: more load the L2 and blur the two latencies.
const WARPS_PER_SM: u32 = 4;
/// Dependent atomics per timed chain at the GPU's calibration.
const CHAIN: i32 = 4;
/// Timing warps per SM and atomics per chain for a table's granules, each timed once: with 4
/// warps a SM and chains of 2, two maps of a 4 GiB array agreed on only 76 % of the granules
/// (the latencies under that load overlap); 1 warp a SM and chains of 8 give two clean groups
/// (H200, bench/NOTES.md, session AG), at ~18 ms for 4 GiB.
const GRANULE_WARPS_PER_SM: u32 = 1;
const GRANULE_CHAIN: i32 = 8;
/// Entries of an SM map: SM ids (`%smid`) below this (`WM_L2_SIDES_MAX_SM` in
/// kernels/common/bulk.cuh, its twin).
const MAX_SM: u32 = 1024;
/// A side's SMs agree (and the other side's disagree) with the reference SM on at least this
/// share of the scratch lines.
const MIN_AGREEMENT: f64 = 0.85;
/// The far latency is at least this many times the near one.
const MIN_FAR_OVER_NEAR: f64 = 1.2;
/// At least this share of the scratch lines has its granule's side.
const MIN_GRANULE_AGREEMENT: f64 = 0.95;

/// The kernels (kernels/l2_sides.cu).
const L2_SIDES: KernelFile = KernelFile {
    path: "kernels/l2_sides.cu",
    text: include_str!("../../../kernels/l2_sides.cu"),
};

/// Which SMs are on which side of a GPU's L2.
#[derive(Clone, Debug, PartialEq)]
pub struct SmL2Sides {
    /// `side[smid]`: 0 or 1, or 0xff for an SM not measured.
    pub side: Vec<u8>,
    /// Latency (cycles) below which a line is on the timing SM's side.
    pub threshold: u32,
    /// Mean latency to near and far lines (cycles), over the SMs.
    pub near_cycles: f64,
    /// See `near_cycles`.
    pub far_cycles: f64,
    /// SMs on side 0 and on side 1.
    pub counts: [u32; 2],
}

/// How the ordered insert takes the sides (`WARPMAP_L2_SIDES`; see the [module docs](self)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SidesMode {
    /// Not at all (the default).
    Off,
    /// The batch split by side as well as by stretch, each side's blocks walking their own
    /// side's keys (`on`, or `synthetic` with made-up sides).
    Split,
    /// The batch split by stretch only, each block picking its side's keys of every tile
    /// (`walk`: session AG's walk, slower; kept for measurements).
    Walk,
}

/// The mode `WARPMAP_L2_SIDES` asks for: `on` or `synthetic` split, `walk` walks, else off.
pub fn mode() -> SidesMode {
    match knob().as_deref() {
        Some("on" | "synthetic") => SidesMode::Split,
        Some("walk") => SidesMode::Walk,
        _ => SidesMode::Off,
    }
}

/// Whether the ordered insert takes the sides at all ([`mode`] is not off).
pub fn enabled() -> bool {
    mode() != SidesMode::Off
}

/// `WARPMAP_L2_SIDES=synthetic` (tests): sides made up instead of measured, even SMs and even
/// granules on side 0, odd ones on side 1, so that the sided walk runs where timings mean
/// nothing (under compute-sanitizer, whose instrumented atomics hide the two latencies).
pub fn synthetic() -> bool {
    knob().as_deref() == Some("synthetic")
}

fn knob() -> Option<String> {
    std::env::var("WARPMAP_L2_SIDES")
        .ok()
        .map(|v| v.trim().to_string())
}

/// The made-up sides of [`synthetic`] for a GPU of `sms` SMs.
fn synthetic_sides(sms: u32) -> SmL2Sides {
    let side: Vec<u8> = (0..MAX_SM).map(|s| (s % 2) as u8).collect();
    SmL2Sides {
        side,
        threshold: 0,
        near_cycles: 0.0,
        far_cycles: 0.0,
        counts: [sms.div_ceil(2), sms / 2],
    }
}

/// The two-means split of latencies: (near mean, far mean), or `None` for fewer than two values.
fn two_means(lat: &[u16]) -> Option<(f64, f64)> {
    let (&min, &max) = (lat.iter().min()?, lat.iter().max()?);
    let (mut lo, mut hi) = (min as f64, max as f64);
    for _ in 0..32 {
        let t = (lo + hi) / 2.0;
        let (mut sl, mut nl, mut sh, mut nh) = (0.0, 0u64, 0.0, 0u64);
        for &x in lat {
            if (x as f64) < t {
                sl += x as f64;
                nl += 1;
            } else {
                sh += x as f64;
                nh += 1;
            }
        }
        if nl == 0 || nh == 0 {
            return None;
        }
        (lo, hi) = (sl / nl as f64, sh / nh as f64);
    }
    Some((lo, hi))
}

/// The sides from the scratch timings: `lat[sm * lines + l]` (cycles) for the SMs that
/// `measured[sm]` says ran exactly one block, over `lines` lines of 128 bytes starting at a
/// 4 KiB boundary. `None` where the timings are not two clear sides (see the module docs).
pub fn classify(lat: &[u16], measured: &[bool], lines: usize) -> Option<SmL2Sides> {
    let sms: Vec<usize> = (0..measured.len()).filter(|&s| measured[s]).collect();
    let row = |s: usize| &lat[s * lines..(s + 1) * lines];
    // Each SM's near lines.
    let mut near: Vec<Vec<bool>> = Vec::with_capacity(sms.len());
    let (mut near_sum, mut far_sum) = (0.0, 0.0);
    for &s in &sms {
        let (lo, hi) = two_means(row(s))?;
        if hi < lo * MIN_FAR_OVER_NEAR {
            return None;
        }
        let t = (lo + hi) / 2.0;
        near.push(row(s).iter().map(|&x| (x as f64) < t).collect());
        near_sum += lo;
        far_sum += hi;
    }
    let reference = near.first()?.clone();
    let mut side = vec![0xffu8; measured.len()];
    let mut counts = [0u32; 2];
    for (i, &s) in sms.iter().enumerate() {
        let agree = near[i]
            .iter()
            .zip(&reference)
            .filter(|(a, b)| a == b)
            .count();
        let share = agree as f64 / lines as f64;
        let sd = if share >= MIN_AGREEMENT {
            0
        } else if share <= 1.0 - MIN_AGREEMENT {
            1
        } else {
            return None;
        };
        side[s] = sd as u8;
        counts[sd] += 1;
    }
    if counts.contains(&0) {
        return None;
    }
    // A line's side 0 where most side-0 SMs find it near; each 4 KiB granule must keep one side.
    let line_side: Vec<bool> = (0..lines)
        .map(|l| {
            let votes = sms
                .iter()
                .enumerate()
                .filter(|&(_, &s)| side[s] == 0)
                .filter(|&(i, _)| near[i][l])
                .count();
            2 * votes < counts[0] as usize
        })
        .collect();
    let per_granule = (GRANULE_BYTES / LINE_BYTES) as usize;
    let kept = (0..lines)
        .filter(|&l| line_side[l] == line_side[l - l % per_granule])
        .count();
    if (kept as f64) < MIN_GRANULE_AGREEMENT * lines as f64 {
        return None;
    }
    let n = sms.len() as f64;
    let (near_cycles, far_cycles) = (near_sum / n, far_sum / n);
    Some(SmL2Sides {
        side,
        threshold: ((near_cycles + far_cycles) / 2.0).round() as u32,
        near_cycles,
        far_cycles,
        counts,
    })
}

/// The kernels' one specialisation (no defines).
pub fn kernel_source() -> KernelSource {
    KernelSource::new("l2_sides", L2_SIDES)
}

fn module(gpu: &Gpu) -> Result<Module> {
    gpu.module(&kernel_source())
}

/// The sides of `gpu`'s L2, measured on the first call for each GPU ordinal and kept for the
/// process (`None`: no two clear sides).
///
/// # Errors
/// The device's (memory, compile, launch).
pub fn sm_sides(gpu: &Gpu) -> Result<Option<Arc<SmL2Sides>>> {
    if synthetic() {
        return Ok(Some(Arc::new(synthetic_sides(gpu.sm_count()))));
    }
    static MEASURED: Mutex<Option<HashMap<usize, Option<Arc<SmL2Sides>>>>> = Mutex::new(None);
    let mut guard = MEASURED.lock().unwrap_or_else(|e| e.into_inner());
    let map = guard.get_or_insert_with(HashMap::new);
    if let Some(known) = map.get(&gpu.ordinal()) {
        return Ok(known.clone());
    }
    let sides = measure_sm_sides(gpu)?.map(Arc::new);
    static TRACE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    if crate::trace::env_flag(&TRACE, "WARPMAP_TRACE_SIDES") {
        eprintln!(
            "warpmap: L2 sides of GPU {}: {:?}",
            gpu.ordinal(),
            sides
                .as_ref()
                .map(|s| (s.counts, s.near_cycles, s.far_cycles, s.threshold))
        );
    }
    map.insert(gpu.ordinal(), sides.clone());
    Ok(sides)
}

fn measure_sm_sides(gpu: &Gpu) -> Result<Option<SmL2Sides>> {
    let module = module(gpu)?;
    let kernel = module.kernel("l2_sides_sm_latency")?;
    let sms = gpu.sm_count();
    let lines = SCRATCH_LINES;
    // 4 KiB-aligned lines: the allocation starts on at least a 256-byte boundary, so take the
    // first 4 KiB boundary inside a buffer one granule longer.
    let scratch = gpu.alloc_filled::<u32>(
        ((lines as u64 * LINE_BYTES + GRANULE_BYTES) / 4) as usize,
        0,
    )?;
    let skip = ((GRANULE_BYTES - scratch.device_address() % GRANULE_BYTES) % GRANULE_BYTES) / 4;
    let scratch = gpu.view(
        &scratch,
        skip as usize..skip as usize + (lines as u64 * LINE_BYTES / 4) as usize,
    )?;
    let mut lat = gpu.alloc_filled::<u16>(MAX_SM as usize * lines as usize, 0)?;
    let mut sm_of_block = gpu.alloc_filled::<u32>(sms as usize, 0xff)?;
    // One block per SM: more dynamic shared memory than half of what an SM has.
    let shared = gpu.shared_per_block_optin();
    kernel.allow_shared(shared)?;
    let (chain, zero) = (CHAIN, 0u32);
    let mut l = kernel.launch();
    l.buf(&*scratch)
        .arg(&lines)
        .arg(&chain)
        .arg(&zero)
        .buf_mut(&mut lat)
        .buf_mut(&mut sm_of_block);
    // SAFETY: l2_sides_sm_latency's (buf, lines, chain, zero, lat, sm_of_block): it adds 0 to
    // buf[0..lines * 32) (the view holds that many words), writes lat[sm * lines + l] for
    // sm < WM_L2_SIDES_MAX_SM (= MAX_SM; MAX_SM * lines allocated) and sm_of_block[0..grid) (sms
    // of them).
    unsafe { l.run(sms, 32 * WARPS_PER_SM, shared) }?;
    let mut host_lat = vec![0u16; lat.len()];
    let mut blocks = vec![0u32; sms as usize];
    gpu.copy_to_host(&lat, &mut host_lat)?;
    gpu.copy_to_host(&sm_of_block, &mut blocks)?;
    let mut seen = vec![0u32; MAX_SM as usize];
    for &b in &blocks {
        if b < MAX_SM {
            seen[b as usize] += 1;
        }
    }
    let measured: Vec<bool> = seen.iter().map(|&c| c == 1).collect();
    Ok(classify(&host_lat, &measured, lines as usize))
}

/// Granules of a 2 MiB page, within which virtual and physical address bits 12-20 agree.
const PAGE_GRANULES: u64 = 512;
/// A table's first granules timed one by one, at least two pages' worth (with whole pages among
/// them): the in-page parity is fitted to them ([`SideModel::fit`]).
const FULL_GRANULES: u64 = 2 * PAGE_GRANULES;
/// Of the other granules, 1 in 2^SAMPLE_BITS is timed: about 8 a page, to vote on each page's
/// flip. (Timing every granule of a 4 GiB array took 18.5 ms on an H200; session AG.)
const SAMPLE_BITS: u32 = 6;
/// The model must give the side that was timed for at least this share of the timed granules.
const MIN_MODEL_AGREEMENT: f64 = 0.95;
/// An in-page bit is in the parity where at least this share of the timed pairs of granules
/// that differ in it alone differ in side (and out of it where at most 1 minus this share do).
const MIN_BIT_CLARITY: f64 = 0.8;

/// Whether granule `g` of an array is timed: the first `full`, then 1 in 2^`sample_bits` of
/// the others (all with 0), spread evenly by a Weyl sequence (the host twin of
/// `wm_l2_granule_sampled`, kernels/l2_sides.cu).
pub fn granule_sampled(g: u64, full: u64, sample_bits: u32) -> bool {
    g < full
        || sample_bits == 0
        || ((g as u32).wrapping_mul(0x9e37_79b1) >> (32 - sample_bits)) == 0
}

/// The sides of a table array's lines as a model: a line's side is a parity of its physical
/// address bits from bit 12 up (session AG's probe, an H200: bits 12, 13, 15, 17, 19, 21, 22, 24),
/// so within a 2 MiB page it is the parity of the address's bits 12-20 under `in_page_mask` (as
/// bits 0-8), flipped by one bit per page for the physical bits above (`page_side`). The split
/// by side computes it per key (`wm_l2_side_at`, kernels/common/multisplit.cuh) from 1 bit per
/// 2 MiB of table, where a bitmap of every 4 KiB granule would be 256 times larger and read at
/// random.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SideModel {
    /// Address bits 12-20 (as bits 0-8) whose parity is a line's side within its page.
    pub in_page_mask: u32,
    /// The array's first page: `base >> 21`.
    pub first_page: u64,
    /// Bit p: page `first_page + p` flips the in-page parity.
    pub page_side: Vec<u32>,
}

impl SideModel {
    /// The side of the byte at device address `at` (in the array the model was fitted to).
    pub fn side_of(&self, at: u64) -> u32 {
        let page = (at >> 21) - self.first_page;
        let flip = self.page_side[(page / 32) as usize] >> (page % 32);
        ((((at >> 12) as u32) & 511 & self.in_page_mask).count_ones() ^ flip) & 1
    }

    /// The model of the array `[base, base + bytes)` from its timed granules: bit g of `bits`
    /// is the side of granule g (the aligned 4 KiB at `(base / 4096 + g) * 4096`) where
    /// [`granule_sampled`]`(g, full, sample_bits)`. The in-page parity comes from the pairs of
    /// granules below `full` that differ in one in-page bit; each page's flip is its timed
    /// granules' vote. With the share of the timed granules whose side the model gives, or
    /// `None` where a bit is unclear or that share is below [`MIN_MODEL_AGREEMENT`] (pages of
    /// another size, or noisy timings).
    pub fn fit(
        base: u64,
        bytes: u64,
        bits: &[u32],
        full: u64,
        sample_bits: u32,
    ) -> Option<(SideModel, f64)> {
        if bytes == 0 {
            return None;
        }
        let g0 = base >> 12;
        let granules = (base + bytes - 1) / GRANULE_BYTES - g0 + 1;
        let full = full.min(granules);
        let bit = |g: u64| (bits[(g / 32) as usize] >> (g % 32)) & 1;
        let mut in_page_mask = 0u32;
        for b in 0..9 {
            let (mut pairs, mut differ) = (0u64, 0u64);
            for g in 0..full {
                let other = (g0 + g) ^ (1 << b);
                if other > g0 + g && other < g0 + full {
                    pairs += 1;
                    differ += (bit(g) != bit(other - g0)) as u64;
                }
            }
            if pairs == 0 {
                return None;
            }
            let share = differ as f64 / pairs as f64;
            if share >= MIN_BIT_CLARITY {
                in_page_mask |= 1 << b;
            } else if share > 1.0 - MIN_BIT_CLARITY {
                return None;
            }
        }
        let first_page = base >> 21;
        let pages = ((base + bytes - 1) >> 21) - first_page + 1;
        let parity = |g: u64| (((g0 + g) as u32) & 511 & in_page_mask).count_ones() & 1;
        let mut votes = vec![[0u32; 2]; pages as usize];
        let timed = (0..granules).filter(|&g| granule_sampled(g, full, sample_bits));
        for g in timed.clone() {
            let page = ((g0 + g) / PAGE_GRANULES - first_page) as usize;
            votes[page][(bit(g) ^ parity(g)) as usize] += 1;
        }
        let mut page_side = vec![0u32; pages.div_ceil(32) as usize];
        for (p, v) in votes.iter().enumerate() {
            if v[1] > v[0] {
                page_side[p / 32] |= 1 << (p % 32);
            }
        }
        let model = SideModel {
            in_page_mask,
            first_page,
            page_side,
        };
        let (mut agree, mut count) = (0u64, 0u64);
        for g in timed {
            count += 1;
            agree += (model.side_of((g0 + g) << 12) == bit(g)) as u64;
        }
        let share = agree as f64 / count.max(1) as f64;
        (share >= MIN_MODEL_AGREEMENT).then_some((model, share))
    }

    /// The model's side of every granule of `[base, base + bytes)`, as the granule bitmap that
    /// the sided walk reads (bit g: granule g on side 1).
    pub fn granule_bits(&self, base: u64, bytes: u64) -> Vec<u32> {
        let g0 = base >> 12;
        let granules = if bytes == 0 {
            0
        } else {
            (base + bytes - 1) / GRANULE_BYTES - g0 + 1
        };
        let mut bits = vec![0u32; granules.div_ceil(32) as usize];
        for g in 0..granules {
            if self.side_of((g0 + g) << 12) == 1 {
                bits[(g / 32) as usize] |= 1 << (g % 32);
            }
        }
        bits
    }
}

/// A table array's sides on the device: the SM map, the model's page flips (the split by side
/// reads them) and the model as a granule bitmap (the sided walk reads it: `wm_bulk`'s
/// `sm_l2_side` and `granule_l2_side`).
pub struct TableL2Sides {
    /// `side[smid]` on the device.
    pub sm: DeviceBuffer<u8>,
    /// Bit g: the g-th 4 KiB granule from the one holding the array's first byte (the aligned
    /// 4 KiB at `(base / 4096 + g) * 4096`) is on side 1, by the model; only where the sided
    /// walk is asked for ([`SidesMode::Walk`]).
    pub granules: Option<DeviceBuffer<u32>>,
    /// The model's `page_side` on the device.
    pub pages: DeviceBuffer<u32>,
    /// The model of the array's sides.
    pub model: SideModel,
    /// The share of the timed granules whose side the model gives (1 for made-up sides).
    pub agreement: f64,
}

impl TableL2Sides {
    /// Measures the array of `bytes` bytes at device address `base` on `gpu`'s stream (after
    /// the work enqueued there before): its first granules one by one and a sample of the rest
    /// ([`FULL_GRANULES`], [`SAMPLE_BITS`]; ~1/50 of timing them all), then the model fitted
    /// to them ([`SideModel::fit`]). `None` where the GPU has no two sides, the array is empty,
    /// or no model fits.
    ///
    /// # Errors
    /// The device's.
    pub fn measure(gpu: &Gpu, base: u64, bytes: u64) -> Result<Option<TableL2Sides>> {
        if bytes == 0 {
            return Ok(None);
        }
        let Some(sides) = sm_sides(gpu)? else {
            return Ok(None);
        };
        let fitted = if synthetic() {
            // Odd granules on side 1: the parity of address bit 12 alone, no page flips.
            let first_page = base >> 21;
            let pages = ((base + bytes - 1) >> 21) - first_page + 1;
            let model = SideModel {
                in_page_mask: 1,
                first_page,
                page_side: vec![0; pages.div_ceil(32) as usize],
            };
            Some((model, 1.0))
        } else {
            let Some(bits) =
                measure_granules(gpu, &sides, base, bytes, FULL_GRANULES, SAMPLE_BITS)?
            else {
                return Ok(None);
            };
            SideModel::fit(base, bytes, &bits, FULL_GRANULES, SAMPLE_BITS)
        };
        let Some((model, agreement)) = fitted else {
            return Ok(None);
        };
        let mut sm = gpu.alloc::<u8>(sides.side.len())?;
        gpu.copy_to_device(&sides.side, &mut sm)?;
        let granules = (mode() == SidesMode::Walk)
            .then(|| gpu.upload(&model.granule_bits(base, bytes)))
            .transpose()?;
        let pages = gpu.upload(&model.page_side)?;
        Ok(Some(TableL2Sides {
            sm,
            granules,
            pages,
            model,
            agreement,
        }))
    }
}

/// Times the granules of the array `[base, base + bytes)` that [`granule_sampled`]`(g, full,
/// sample_bits)` picks (all with `sample_bits` 0) from SMs of known side on `gpu`'s stream:
/// bit g is set for those on side 1 (the others' bits are 0). `None` where `sides` is `None`
/// (the GPU's sides, [`sm_sides`]) or the array is empty.
///
/// # Errors
/// The device's.
pub fn measure_granules(
    gpu: &Gpu,
    sides: &SmL2Sides,
    base: u64,
    bytes: u64,
    full: u64,
    sample_bits: u32,
) -> Result<Option<Vec<u32>>> {
    if bytes == 0 || sample_bits >= 32 {
        return Ok(None);
    }
    let mut sm = gpu.alloc::<u8>(sides.side.len())?;
    gpu.copy_to_device(&sides.side, &mut sm)?;
    let granules = (base + bytes - 1) / GRANULE_BYTES - base / GRANULE_BYTES + 1;
    let mut bits = gpu.alloc_filled::<u32>(granules.div_ceil(32) as usize, 0)?;
    let module = module(gpu)?;
    let kernel = module.kernel("l2_sides_granules")?;
    let (threshold, chain, zero) = (sides.threshold, GRANULE_CHAIN, 0u32);
    let mut l = kernel.launch();
    l.arg(&base)
        .arg(&bytes)
        .buf(&sm)
        .arg(&threshold)
        .arg(&chain)
        .arg(&zero)
        .buf_mut(&mut bits)
        .arg(&full)
        .arg(&sample_bits);
    // SAFETY: l2_sides_granules's (base, bytes, sm_l2_side, threshold, chain, zero, bits, full,
    // sample_bits): it adds 0 to one word of some granules inside the caller's array [base,
    // base + bytes) (ordered on this stream before and after), reads sm_l2_side[0..MAX_SM)
    // (allocated: the map has MAX_SM entries) and sets bits of bits[0..ceil(granules / 32)), as
    // allocated; sample_bits < 32 (checked above) keeps its shift defined.
    unsafe { l.run(gpu.sm_count(), 32 * GRANULE_WARPS_PER_SM, 0) }?;
    Ok(Some(gpu.download(&bits)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Synthetic timings: `sms` SMs, the even ones on side 0; line l homed on side
    /// `home(l)`; near 350 cycles, far 535, with a little spread.
    fn timings(sms: usize, lines: usize, home: impl Fn(usize) -> usize) -> Vec<u16> {
        let mut lat = vec![0u16; sms * lines];
        for s in 0..sms {
            for l in 0..lines {
                let jitter = ((s * 31 + l * 17) % 23) as u16;
                lat[s * lines + l] = if home(l) == s % 2 {
                    340 + jitter
                } else {
                    525 + jitter
                };
            }
        }
        lat
    }

    /// An H200-like array: in-page parity of address bits 12, 13, 15, 17, 19 (in-page bits 0,
    /// 1, 3, 5, 7) and a pseudo-random flip per 2 MiB page; `base` 2 MiB-aligned plus `offset`.
    fn h200_like(base: u64, bytes: u64, flip: impl Fn(u64) -> bool) -> (SideModel, Vec<u32>) {
        let first_page = base >> 21;
        let pages = ((base + bytes - 1) >> 21) - first_page + 1;
        let mut page_side = vec![0u32; pages.div_ceil(32) as usize];
        for p in 0..pages {
            if flip(p) {
                page_side[(p / 32) as usize] |= 1 << (p % 32);
            }
        }
        let model = SideModel {
            in_page_mask: 0b1010_1011,
            first_page,
            page_side,
        };
        let bits = model.granule_bits(base, bytes);
        (model, bits)
    }

    /// Keeps the bits of the granules a measurement times, zeroes the others.
    fn timed_only(mut bits: Vec<u32>, full: u64, sample_bits: u32) -> Vec<u32> {
        for g in 0..bits.len() as u64 * 32 {
            if !granule_sampled(g, full, sample_bits) {
                bits[(g / 32) as usize] &= !(1 << (g % 32));
            }
        }
        bits
    }

    #[test]
    fn a_parity_model_is_fitted_from_a_sample() {
        let flip = |p: u64| (p.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 63) == 1;
        // 256 MiB from 1.5 MiB into a page: the first page is partial.
        let (base, bytes) = ((7u64 << 33) + (3 << 19), 256u64 << 20);
        let (model, bits) = h200_like(base, bytes, flip);
        let timed = timed_only(bits, FULL_GRANULES, SAMPLE_BITS);
        let (fitted, share) =
            SideModel::fit(base, bytes, &timed, FULL_GRANULES, SAMPLE_BITS).expect("a model");
        assert_eq!(fitted, model);
        assert_eq!(share, 1.0);
        // Every granule's side by the fitted model is the array's.
        assert_eq!(
            fitted.granule_bits(base, bytes),
            model.granule_bits(base, bytes)
        );
        assert_eq!(fitted.side_of(base), model.side_of(base));
    }

    #[test]
    fn a_noisy_sample_still_fits() {
        let (base, bytes) = (1u64 << 34, 64u64 << 20);
        let (model, bits) = h200_like(base, bytes, |p| p % 3 == 1);
        let mut timed = timed_only(bits, FULL_GRANULES, SAMPLE_BITS);
        // One timed granule in 50 reads the wrong side.
        let mut n = 0;
        for g in 0..timed.len() as u64 * 32 {
            if granule_sampled(g, FULL_GRANULES, SAMPLE_BITS) {
                n += 1;
                if n % 50 == 0 {
                    timed[(g / 32) as usize] ^= 1 << (g % 32);
                }
            }
        }
        let (fitted, share) =
            SideModel::fit(base, bytes, &timed, FULL_GRANULES, SAMPLE_BITS).expect("a model");
        assert_eq!(fitted, model);
        assert!((0.97..1.0).contains(&share), "{share}");
    }

    #[test]
    fn sides_that_follow_no_page_parity_are_refused() {
        // Sides by a hash of each 64 KiB (pages of 64 KiB): in-page bits 4-8 unclear.
        let (base, bytes) = (1u64 << 34, 64u64 << 20);
        let granules = bytes / GRANULE_BYTES;
        let mut bits = vec![0u32; granules.div_ceil(32) as usize];
        for g in 0..granules {
            let side = (g & 1) ^ ((g >> 4).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 63);
            bits[(g / 32) as usize] |= (side as u32) << (g % 32);
        }
        assert_eq!(SideModel::fit(base, bytes, &bits, FULL_GRANULES, 0), None);
        assert_eq!(SideModel::fit(base, 0, &bits, FULL_GRANULES, 0), None);
    }

    #[test]
    fn samples_reach_every_page() {
        // 4 GiB: at least 4 timed granules in each 2 MiB page, about 1 in 64 overall.
        let pages = 2048u64;
        let mut per_page = vec![0u32; pages as usize];
        for g in FULL_GRANULES..pages * PAGE_GRANULES {
            if granule_sampled(g, FULL_GRANULES, SAMPLE_BITS) {
                per_page[(g / PAGE_GRANULES) as usize] += 1;
            }
        }
        let least = per_page[2..].iter().min().copied().unwrap_or(0);
        let all: u32 = per_page.iter().sum();
        assert!(least >= 4, "{least}");
        let share = all as f64 / ((pages * PAGE_GRANULES - FULL_GRANULES) as f64);
        assert!((1.0 / 70.0..1.0 / 58.0).contains(&share), "{share}");
    }

    #[test]
    fn two_clear_sides_are_found() {
        let (sms, lines) = (8, 1024);
        // Sides by 4 KiB granule (32 lines), a parity of granule bits as on the H200.
        let home = |l: usize| ((l / 32) ^ (l / 64) ^ (l / 256)).count_ones() as usize % 2;
        let lat = timings(sms, lines, home);
        let s = classify(&lat, &vec![true; sms], lines).expect("two sides");
        assert_eq!(s.counts, [4, 4]);
        assert_eq!(s.side, vec![0, 1, 0, 1, 0, 1, 0, 1]);
        assert!(s.threshold > 370 && s.threshold < 520, "{}", s.threshold);
        assert!(s.near_cycles < 370.0 && s.far_cycles > 520.0);
    }

    #[test]
    fn one_uniform_l2_has_no_sides() {
        let (sms, lines) = (8, 1024);
        let lat: Vec<u16> = (0..sms * lines).map(|i| 300 + (i % 40) as u16).collect();
        assert_eq!(classify(&lat, &vec![true; sms], lines), None);
    }

    #[test]
    fn sides_that_change_within_a_granule_are_refused() {
        let (sms, lines) = (8, 1024);
        let lat = timings(sms, lines, |l| l % 2); // every other line
        assert_eq!(classify(&lat, &vec![true; sms], lines), None);
    }

    #[test]
    fn unmeasured_sms_stay_unknown_and_mixed_sms_refuse() {
        let (sms, lines) = (8, 1024);
        let home = |l: usize| (l / 32) % 2;
        let lat = timings(sms, lines, home);
        let mut measured = vec![true; sms];
        measured[3] = false;
        let s = classify(&lat, &measured, lines).expect("two sides");
        assert_eq!(s.side[3], 0xff);
        assert_eq!(s.counts, [4, 3]);
        // An SM near on half of each side's lines: no clear grouping.
        let mut lat = lat;
        for l in 0..lines {
            lat[5 * lines + l] = if (l / 64) % 2 == 0 { 340 } else { 530 };
        }
        assert_eq!(classify(&lat, &vec![true; sms], lines), None);
    }
}
