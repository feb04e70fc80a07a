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
//! The ordered insert can take the sides (**off by default**: `WARPMAP_L2_SIDES=on` turns it on,
//! for measurements; `=synthetic` makes sides up, for tests of the walk under a sanitizer):
//! 1. once per GPU ([`sm_sides`]), each SM times L2 atomics to the lines of a 1 MiB scratch
//!    buffer; [`classify`] splits each SM's latencies in two (near and far), groups the SMs by
//!    the lines they find near, and checks that a side holds over whole 4 KiB granules;
//! 2. once per table array ([`TableL2Sides::measure`]), one line of every 4 KiB granule is timed
//!    from some SM of known side: a bitmap of the granules on side 1 (~18 ms for 4 GiB);
//! 3. the ordered insert kernel (`wm_for_each_ordered_l2_sided`, kernels/common/bulk.cuh) hands
//!    every tile of the batch to one block of each side, and each block inserts the tile's keys
//!    whose first window is on its side (one counter of tiles a side; a block whose side's tiles
//!    are done takes the other side's, so every key is inserted once whatever SMs the blocks get).
//!
//! A wrong side costs only speed: the maps never decide whether or where a key is stored.
//! Where the latencies are not two clear groups (a GPU with one L2, or noise) there are no
//! sides and the ordered insert runs as without them.
//!
//! **Why off:** measured on an H200 (2^27 u64 pairs at load 0.5, bench/NOTES.md, session AG),
//! the walk took the fabric's requests from 168 M to 45 M and the L2's from 512 M to 422 M, but
//! the kernel ran 7.1 ms against 6.0: picking each tile's keys of a side costs every block the
//! hash of every key of the tile (instructions 1.49 G → 2.34 G), and the L2 fell to 54 % busy.
//! Inserts: u64 16.8 → 14.6-14.8 G/s at load 0.5, u32 23.3 → 22.3-22.6. The measurements and
//! the maps are the ground for splitting the batch by side as well as by stretch, so that each
//! side's blocks walk their own keys with nothing to pick.

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

/// Whether the ordered insert takes the sides: only where `WARPMAP_L2_SIDES` is `on` or
/// `synthetic` (see the [module docs](self) for why not by default).
pub fn enabled() -> bool {
    matches!(knob().as_deref(), Some("on" | "synthetic"))
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

/// A table array's sides on the device: the SM map and the granule bitmap the ordered insert
/// kernel reads (`wm_bulk`'s `sm_l2_side` and `granule_l2_side`).
pub struct TableL2Sides {
    /// `side[smid]` on the device.
    pub sm: DeviceBuffer<u8>,
    /// Bit g: the g-th 4 KiB granule from the one holding the array's first byte (the aligned
    /// 4 KiB at `(base / 4096 + g) * 4096`) is on side 1.
    pub granules: DeviceBuffer<u32>,
}

impl TableL2Sides {
    /// Measures the array of `bytes` bytes at device address `base` on `gpu`'s stream (after
    /// the work enqueued there before); `None` where the GPU has no two sides or the array is
    /// empty.
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
        let mut sm = gpu.alloc::<u8>(sides.side.len())?;
        gpu.copy_to_device(&sides.side, &mut sm)?;
        let granules = (base + bytes - 1) / GRANULE_BYTES - base / GRANULE_BYTES + 1;
        if synthetic() {
            // Odd granules on side 1.
            return Ok(Some(TableL2Sides {
                sm,
                granules: gpu.alloc_filled::<u32>(granules.div_ceil(32) as usize, 0xaa)?,
            }));
        }
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
            .buf_mut(&mut bits);
        // SAFETY: l2_sides_granules's (base, bytes, sm_l2_side, threshold, chain, zero, bits): it adds
        // 0 to one word of each granule inside the caller's array [base, base + bytes) (ordered
        // on this stream before and after), reads sm_l2_side[0..MAX_SM) (allocated: the map
        // has MAX_SM entries) and sets bits of bits[0..ceil(granules / 32)), as allocated.
        unsafe { l.run(gpu.sm_count(), 32 * GRANULE_WARPS_PER_SM, 0) }?;
        Ok(Some(TableL2Sides { sm, granules: bits }))
    }
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
