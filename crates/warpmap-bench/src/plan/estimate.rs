//! The size of a [`Plan`] and a rough time estimate ([`Plan::estimate`]), printed before a run
//! and recorded in its report; the host memory the cached key sets may take.

use super::{keys_for, Distribution, Op, Plan};
use crate::harness::roofline::host_bound_ops;
use warpmap::table::Backend;

/// The size of a plan and a rough time estimate.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Estimate {
    /// Measured sets: (type, distribution, group size, load factor).
    pub sets: usize,
    /// Result rows: sets times selected operations.
    pub rows: usize,
    /// Timed runs: sets times runs.
    pub timed_runs: usize,
    /// Tables made (fixed keys: one per set; fixed slots: one per type, distribution, group).
    pub tables: usize,
    /// Rough wall-clock seconds of the whole benchmark (the model is in [`Plan::estimate`]).
    pub seconds: f64,
    /// Host memory of the cached key sets, bytes (fixed-keys mode).
    pub host_bytes: u64,
    /// Device memory at the peak (largest table, key sets, outputs), bytes (GPU).
    pub device_bytes: u64,
}

impl Plan {
    /// Whether a (type, distribution)'s `runs` key sets fit the host cache (fixed keys only).
    pub(crate) fn host_cache_fits(&self, key_bytes: usize, value_bytes: usize) -> bool {
        self.keys().is_some_and(|n| {
            self.runs as u64 * self.set_bytes(n, key_bytes, value_bytes) <= host_cache_budget()
        })
    }

    /// Bytes of one key set of `n` keys: keys, values, and absent keys if needed.
    pub(crate) fn set_bytes(&self, n: usize, key_bytes: usize, value_bytes: usize) -> u64 {
        let per = key_bytes
            + value_bytes
            + if self.needs_misses() { key_bytes } else { 0 }
            + if self.needs_half() { key_bytes } else { 0 };
        n as u64 * per as u64
    }

    /// The size and a rough time estimate, calibrated on an H100 host (16 threads) where the
    /// fig7, fig8 and compare presets took 30, 35 and 16 s. The model (GPU): key generation at
    /// 4 ns (unique) or 120 ns (Zipf draw and distinct count) per key and host thread; uploads at
    /// 10 GB/s (fixed keys: once per run set when all sets fit in 40 GB of device memory beside
    /// the largest table, else every run), verification downloads at 12 GB/s; kernels at
    /// conservative H100 rates by WarpDrive slot layout (8-byte u32/u32 slots: insert 6 G/s,
    /// finds 12 G/s, erase 8 G/s; 16-byte pair slots (u64/u64, u32/u64): 4, 8 and 7 G/s; the
    /// tagged layout (u128 keys): half the pair rates, a guess, not calibrated; find_miss
    /// 65 G/s x (1 - lf)); table memory from the slot layout; 1 s per kernel module compile;
    /// the roofline 3 s. Stadium (guesses, not calibrated): device buckets insert 4 G/s, finds
    /// 5 G/s, find_miss 10 G/s with 4- and 8-bit tickets; host buckets: every host access at the
    /// bus's random-access rate for the table's size (the H200 figures, 0.45 G/s at
    /// 64 MiB to 0.04 G/s at 16 GiB, interpolated), with the expected bucket reads of double
    /// hashing at the load factor, filtered by the info bits (a wrong candidate passes with
    /// probability 2^-(T-1)); pinning the host buckets at 2 GB/s; the host bound 2 x (runs + 1)
    /// kernels per table size. find_half: half a find_hit and half a find_miss. CPU: about 80 ns
    /// (insert) and 50 ns (others) per key and operation per thread.
    pub fn estimate(&self, host_threads: usize) -> Estimate {
        const H2D: f64 = 10e9;
        const D2H: f64 = 12e9;
        let threads = host_threads.max(1) as f64;
        let sets = self.sets();
        let gpu = self.backend == Backend::Gpu;
        let variants = self.variants();
        let nv = variants.len();
        let tables = match self.keys() {
            Some(_) => sets,
            None => self.types.len() * self.distributions.len() * nv,
        };
        let mut s = 0.5f64;
        let mut host_bytes = 0u64;
        let mut device_bytes = 0u64;
        if gpu {
            s += if self.quick { 1.0 } else { 3.0 };
            s += 1.0 * (self.types.len() * nv) as f64;
        }
        for &t in &self.types {
            let (kb, vb) = (t.key_bytes(), t.value_bytes());
            let dev_table = |cap: f64| -> f64 {
                variants
                    .iter()
                    .map(|&v| v.device_bytes(kb, vb, cap))
                    .fold(0.0, f64::max)
            };
            for &d in &self.distributions {
                let gen_per_key = match d {
                    Distribution::Unique => 4e-9,
                    Distribution::Zipf => 120e-9,
                } / threads;
                let host_cached = self.host_cache_fits(kb, vb);
                let mut dev_cached = false;
                if let Some(n) = self.keys() {
                    let sets_bytes = self.runs as u64 * self.set_bytes(n, kb, vb);
                    if host_cached {
                        s += self.runs as f64 * n as f64 * gen_per_key;
                        host_bytes = host_bytes.max(sets_bytes);
                    }
                    let lf_min = self.load_factors.iter().copied().fold(1.0, f64::min);
                    let table = dev_table((n as f64 / lf_min).ceil());
                    let outs = n as u64 * (vb as u64 + 1);
                    dev_cached = gpu && (sets_bytes as f64 + table) <= 40e9;
                    let resident = if dev_cached {
                        sets_bytes
                    } else {
                        self.set_bytes(n, kb, vb)
                    };
                    if gpu {
                        device_bytes = device_bytes.max(table as u64 + resident + outs);
                    }
                    if dev_cached {
                        s += sets_bytes as f64 / H2D;
                    }
                }
                for (li, &lf) in self.load_factors.iter().enumerate() {
                    let mut bound_measured = false;
                    for &v in &variants {
                        let n = self
                            .keys_for_variant(v, d)
                            .unwrap_or_else(|| keys_for(lf, self.slots));
                        let nf = n as f64;
                        let same_n = Some(n) == self.keys();
                        let mut per_run = if host_cached && same_n {
                            0.0
                        } else {
                            nf * gen_per_key
                        };
                        let slices = self.slice_log2.len().max(1) as f64;
                        if !gpu {
                            let others = self.ops.iter().filter(|o| **o != Op::Insert).count();
                            per_run += if self.mixed() {
                                // Per slice size: keys, both sequences, the final finds.
                                slices * nf * (gen_per_key + (2.0 * 130e-9 + 60e-9) / threads)
                            } else {
                                nf * (80e-9 + others as f64 * 50e-9 + 2e-9) / threads
                            };
                            s += self.runs as f64 * per_run;
                            continue;
                        }
                        let cap = match self.keys() {
                            Some(_) => (nf / lf).ceil(),
                            None => self.slots as f64,
                        };
                        let host_table = if v.host_buckets() {
                            cap * (kb + vb) as f64
                        } else {
                            0.0
                        };
                        let rate = |op: Op| v.op_rate(kb, vb, lf, host_table, op);
                        let upload = if dev_cached && same_n {
                            0.0
                        } else {
                            self.set_bytes(n, kb, vb) as f64
                        };
                        let mut down = 0.0;
                        let mut kern = nf / rate(Op::Insert);
                        for &op in &self.ops {
                            if op != Op::Insert {
                                kern += nf / rate(op);
                            }
                            down += nf
                                * match op {
                                    Op::FindHit | Op::FindHalf => (vb + 1) as f64,
                                    Op::FindUnordered => (vb + 5) as f64,
                                    Op::FindMiss | Op::Contains => 1.0,
                                    Op::Insert | Op::Erase | Op::Reduce | Op::Mixed => 0.0,
                                };
                        }
                        let mut verify = nf * self.ops.len() as f64 * 2e-9 / threads;
                        let mut upload = upload;
                        if self.mixed() {
                            // Per slice size and run: fresh keys and the slices' arrays (keys,
                            // values, the mixed batches: twice as long, with op codes), the
                            // separated and the mixed sequence (n inserts and about n finds
                            // each, three launches per slice at about 10 us), a final find of
                            // every key, and every output downloaded and checked.
                            let (k, v) = (kb as f64, vb as f64);
                            let ins_find = nf / rate(Op::Insert) + nf / rate(Op::FindHit);
                            kern = 0.0;
                            for &sl in &self.slice_log2 {
                                let count = (2.0 * nf / (1u64 << sl) as f64).ceil();
                                kern += 2.0 * ins_find + nf / rate(Op::FindHit) + count * 30e-6;
                            }
                            upload = slices * nf * (3.0 * (k + v) + 2.0);
                            down = slices * nf * (4.0 * (v + 1.0) + 8.0);
                            per_run = slices * nf * (gen_per_key + 150e-9 / threads);
                            verify = slices * nf * 50e-9 / threads;
                        }
                        per_run += kern + upload / H2D + down / D2H + verify + 0.003;
                        if self.keys().is_none() {
                            device_bytes = device_bytes.max(
                                dev_table(cap) as u64
                                    + self.set_bytes(n, kb, vb)
                                    + n as u64 * (vb as u64 + 1),
                            );
                        }
                        if self.keys().is_some() || li == 0 {
                            // A table: allocation, clear, warm-up; host buckets are pinned.
                            s += 0.01 + v.device_bytes(kb, vb, cap) / 1e12 + host_table / 2e9;
                        }
                        if host_table > 0.0 && !bound_measured && (self.keys().is_some() || li == 0)
                        {
                            bound_measured = true;
                            let ops =
                                host_bound_ops(self.quick, (host_table / (kb + vb) as f64) as u64)
                                    as f64;
                            s += host_table / 2e9
                                + 2.0 * (self.runs + 1) as f64 * ops / host_random_rate(host_table);
                        }
                        s += self.runs as f64 * per_run;
                    }
                }
            }
        }
        Estimate {
            sets,
            rows: sets * self.ops.len(),
            timed_runs: sets * self.runs,
            tables,
            seconds: s,
            host_bytes,
            device_bytes,
        }
    }
}

/// Random accesses per second to pinned mapped host memory of `bytes` bytes (the H200
/// measurements, interpolated log-log; an estimate only: the bench measures the real bound).
pub(crate) fn host_random_rate(bytes: f64) -> f64 {
    const PTS: [(f64, f64); 4] = [
        (64.0 * 1048576.0, 0.45e9),
        (1073741824.0, 0.11e9),
        (4.0 * 1073741824.0, 0.048e9),
        (16.0 * 1073741824.0, 0.04e9),
    ];
    if bytes <= PTS[0].0 {
        return PTS[0].1;
    }
    for w in PTS.windows(2) {
        let ((x0, y0), (x1, y1)) = (w[0], w[1]);
        if bytes <= x1 {
            let f = (bytes / x0).ln() / (x1 / x0).ln();
            return (y0.ln() + f * (y1 / y0).ln()).exp();
        }
    }
    PTS[3].1
}

pub(crate) fn human_bytes(b: u64) -> String {
    let b = b as f64;
    if b >= (1u64 << 30) as f64 {
        format!("{:.1} GiB", b / (1u64 << 30) as f64)
    } else {
        format!("{:.1} MiB", b / (1u64 << 20) as f64)
    }
}

/// Host memory the cached key sets of one (type, distribution) may take at most.
pub(crate) fn host_cache_budget() -> u64 {
    let avail = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("MemAvailable:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map(|kb| kb * 1024)
        .unwrap_or(16 << 30);
    (avail / 2).min(48 << 30)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{resolve, BenchConfig, KvType};

    fn cfg() -> BenchConfig {
        BenchConfig::default()
    }

    #[test]
    fn sizes_follow_key_and_value_widths() {
        let base = BenchConfig {
            keys_log2: Some(20),
            runs: Some(2),
            load_factors: Some(vec![0.5]),
            ..cfg()
        };
        let p = resolve(&base, Backend::Gpu).unwrap();
        let n = 1usize << 20;
        // keys + values + absent keys (find_miss is measured).
        assert_eq!(p.set_bytes(n, 4, 4), n as u64 * 12);
        assert_eq!(p.set_bytes(n, 4, 8), n as u64 * 16);
        assert_eq!(p.set_bytes(n, 16, 8), n as u64 * 40);
        let only = |t: KvType| {
            resolve(
                &BenchConfig {
                    types: Some(vec![t]),
                    ..base.clone()
                },
                Backend::Gpu,
            )
            .unwrap()
            .estimate(16)
        };
        let cap = 2 * n as u64;
        let (e32, e64, e3264, e128) = (
            only(KvType::U32),
            only(KvType::U64),
            only(KvType::U32U64),
            only(KvType::U128U64),
        );
        // Host: the runs' key sets.
        assert_eq!(e32.host_bytes, 2 * 12 * n as u64);
        assert_eq!(e3264.host_bytes, 2 * 16 * n as u64);
        assert_eq!(e128.host_bytes, 2 * 40 * n as u64);
        // Device: table (slot layout) + key sets + outputs (value + flag).
        assert_eq!(e32.device_bytes, cap * 8 + 2 * 12 * n as u64 + 5 * n as u64);
        assert_eq!(
            e64.device_bytes,
            cap * 16 + 2 * 24 * n as u64 + 9 * n as u64
        );
        assert_eq!(
            e3264.device_bytes,
            cap * 16 + 2 * 16 * n as u64 + 9 * n as u64
        );
        assert_eq!(
            e128.device_bytes,
            cap * 28 + 2 * 40 * n as u64 + 9 * n as u64
        );
        assert!(e128.seconds > e64.seconds);
    }

    #[test]
    fn host_rate_model_follows_the_measurements() {
        let gib = (1u64 << 30) as f64;
        assert!((host_random_rate(gib / 16.0) - 0.45e9).abs() < 1e6);
        assert!((host_random_rate(gib) - 0.11e9).abs() < 1e6);
        assert!((host_random_rate(64.0 * gib) - 0.04e9).abs() < 1e6);
        let mid = host_random_rate(2.0 * gib);
        assert!(mid < 0.11e9 && mid > 0.048e9);
    }
}
