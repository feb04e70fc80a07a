//! `warpmap outofcore`: a Stadium table whose buckets live in host memory and take more bytes
//! than the GPU has, built and queried on the device (stadium-hashing.txt §III, "Efficient
//! Out-of-core Performance").
//!
//! The table has `u64` keys and values of [`OutOfCoreConfig::value_bytes`] bytes (default 128:
//! 136-byte records, so that 90 GiB of buckets are about 710 million buckets, below Stadium's
//! 2^32 - 5, while the bytes exceed an 80 GB GPU). Its ticket board is in GPU memory, its
//! buckets in mapped host memory ([`Location::Host`], on the [`HostPages`] chosen).
//!
//! Everything is generated and checked on the device (`kernels/workload.cu`), so no key or
//! value crosses the bus except through the table: keys are keygen's injective sequence
//! ([`keygen::key_at`](warpmap::keygen::key_at) for `u64`), values a hash of the key
//! ([`value_word`]). Inserts go in batches of `2^batch_log2` keys until the load factor is
//! reached, each timed with CUDA events around the insert kernel alone (key and value
//! generation are outside the timing). Then `runs` lookups of `2^query_log2` present keys
//! (sampled from the inserted ones, every value verified) and as many of absent keys (later
//! indices of the same sequence, so absent by construction; `found` must be false), each
//! timed and verified; the median counts. [`run`] returns the [`OutOfCoreReport`] (serialisable
//! to JSON).

use crate::harness::timing::{median, utc_now};
use crate::kernels::workload_source;
use std::sync::Arc;
use std::time::Instant;
use warpmap::device::{transparent_huge_pages, DeviceBuffer, Gpu, HostPages};
use warpmap::hash::next_prime;
use warpmap::table::stadium::{entries_per_word, TICKET_BITS};
use warpmap::{DeviceHashTable, Error, HashTable, Location, Result, Stadium, StadiumConfig, Value};

const BLOCK: u32 = 256;
const GIB: f64 = (1u64 << 30) as f64;
/// The largest bucket count Stadium indexes, less room for rounding up to a prime.
const MAX_BUCKETS: u64 = u32::MAX as u64 - 4 - 4096;
/// The value widths the command supports (the `Value` types it is compiled for).
pub const VALUE_BYTES: [usize; 5] = [8, 32, 64, 128, 256];
/// Host memory left to the system, the driver and the process beside the buckets when the
/// memory guard compares with a limit.
pub const HOST_HEADROOM_BYTES: u64 = 8 << 30;

/// What `warpmap outofcore` builds and measures.
#[derive(Clone, Debug, PartialEq)]
pub struct OutOfCoreConfig {
    /// Bytes of host buckets to aim for (the table gets the prime number of buckets just above
    /// `host_bytes / record bytes`).
    pub host_bytes: u64,
    /// Value width in bytes, one of [`VALUE_BYTES`] (keys are `u64`).
    pub value_bytes: usize,
    /// Keys inserted over buckets, in (0, 1].
    pub load_factor: f64,
    /// Keys per insert batch, as a power of two.
    pub batch_log2: u32,
    /// Queries per lookup batch, as a power of two (at most the keys inserted are sampled).
    pub query_log2: u32,
    /// Timed lookup runs of each kind (present, absent); the median counts.
    pub runs: usize,
    /// Stadium ticket size in bits.
    pub ticket_bits: u32,
    /// The host pages of the buckets.
    pub pages: HostPages,
    /// The key sequence's seed.
    pub seed: u64,
    /// The source revision, recorded in the report.
    pub commit: String,
}

impl Default for OutOfCoreConfig {
    /// 90 GiB of 136-byte records at load factor 0.85, batches of 2^26 keys, lookups of 2^26
    /// keys, 3 runs, 8-bit tickets, the default host pages.
    fn default() -> Self {
        OutOfCoreConfig {
            host_bytes: 90 << 30,
            value_bytes: 128,
            load_factor: 0.85,
            batch_log2: 26,
            query_log2: 26,
            runs: 3,
            ticket_bits: 8,
            pages: warpmap::device::DEFAULT_HOST_PAGES,
            seed: 0x0bad_5eed_00c0_ffee,
            commit: "unknown".into(),
        }
    }
}

/// The sizes a configuration gives, computed without a GPU ([`sizes`]).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Sizes {
    /// Bytes per bucket (key + value).
    pub record_bytes: usize,
    /// Buckets (prime).
    pub buckets: u64,
    /// Bytes of host buckets.
    pub host_bucket_bytes: u64,
    /// Bytes of the ticket board (GPU memory).
    pub board_bytes: u64,
    /// Keys inserted (`round(load_factor * buckets)`).
    pub keys: u64,
    /// Insert batches.
    pub batches: u64,
    /// Keys per insert batch: the keys split evenly over the batches, at most
    /// `2^batch_log2` (the last batch may hold fewer).
    pub batch_keys: u64,
    /// Keys per lookup batch.
    pub queries: u64,
    /// Device bytes of the insert batch buffers (keys and values) and of the lookup buffers
    /// (keys, values out, found flags), the larger of the two.
    pub batch_device_bytes: u64,
}

/// The sizes of `cfg`'s table and batches; [`Error::InvalidInput`] for a configuration that
/// cannot run (no bytes, a load factor outside (0, 1], a value width not in [`VALUE_BYTES`],
/// a ticket size not in 1, 2, 4, 8, a batch or query size outside 2^10..2^30, no runs), and
/// [`Error::Unsupported`] when the buckets would be too many for Stadium (2^32 - 5): wider
/// values then hold the same bytes in fewer buckets.
pub fn sizes(cfg: &OutOfCoreConfig) -> Result<Sizes> {
    if !VALUE_BYTES.contains(&cfg.value_bytes) {
        return Err(Error::invalid(format!(
            "value width {} bytes: one of {VALUE_BYTES:?}",
            cfg.value_bytes
        )));
    }
    if !(cfg.load_factor > 0.0 && cfg.load_factor <= 1.0) {
        return Err(Error::invalid(format!(
            "load factor {}: must be in (0, 1]",
            cfg.load_factor
        )));
    }
    if !TICKET_BITS.contains(&cfg.ticket_bits) {
        return Err(Error::invalid(format!(
            "ticket size {} bits: one of {TICKET_BITS:?}",
            cfg.ticket_bits
        )));
    }
    for (what, l) in [("batch", cfg.batch_log2), ("query", cfg.query_log2)] {
        if !(10..=30).contains(&l) {
            return Err(Error::invalid(format!(
                "{what} size 2^{l}: the exponent must be in 10..=30"
            )));
        }
    }
    if cfg.runs == 0 {
        return Err(Error::invalid("at least one lookup run"));
    }
    let record = 8 + cfg.value_bytes as u64;
    let want = cfg.host_bytes / record;
    if want < 2 {
        return Err(Error::invalid(format!(
            "{} bytes of host buckets hold fewer than 2 records of {record} bytes",
            cfg.host_bytes
        )));
    }
    if want > MAX_BUCKETS {
        return Err(Error::Unsupported(format!(
            "{:.1} GiB of {record}-byte records are {want} buckets; Stadium indexes fewer than \
             2^32 - 5: use wider values (--value-bytes) or fewer bytes",
            cfg.host_bytes as f64 / GIB
        )));
    }
    let buckets = next_prime(want);
    let keys = ((cfg.load_factor * buckets as f64).round() as u64).clamp(1, buckets);
    let batches = keys.div_ceil(1u64 << cfg.batch_log2);
    let batch = keys.div_ceil(batches);
    let queries = (1u64 << cfg.query_log2).min(keys);
    let vb = cfg.value_bytes as u64;
    Ok(Sizes {
        record_bytes: record as usize,
        buckets,
        host_bucket_bytes: buckets * record,
        board_bytes: buckets.div_ceil(entries_per_word(cfg.ticket_bits) as u64) * 4,
        keys,
        batches,
        batch_keys: batch,
        queries,
        batch_device_bytes: (batch * (8 + vb)).max(queries * (8 + vb + 1)),
    })
}

/// Word `w` of the value stored with `key` (the host twin of `kernels/workload.cu`'s
/// `wl_value_word`): 4-byte words of a hash of the key and the word's index.
pub fn value_word(key: u64, w: u32) -> u32 {
    const SALT: u64 = 0x5bd1_e995_c2b2_ae35;
    (warpmap::hash::fmix64(key ^ SALT ^ (w as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)) >> 16)
        as u32
}

/// What `/proc/meminfo` says, in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct HostMemory {
    /// `MemTotal`. On memory-hotplug VMs it starts small and grows as memory is used: not a
    /// limit.
    pub mem_total: Option<u64>,
    /// `MemAvailable`.
    pub mem_available: Option<u64>,
}

/// `MemTotal` and `MemAvailable` of a `/proc/meminfo` text.
pub fn parse_meminfo(text: &str) -> HostMemory {
    let field = |name: &str| {
        text.lines().find_map(|l| {
            let rest = l.strip_prefix(name)?.strip_prefix(':')?;
            let mut it = rest.split_whitespace();
            let v: u64 = it.next()?.parse().ok()?;
            Some(match it.next() {
                Some("kB") => v * 1024,
                _ => v,
            })
        })
    };
    HostMemory {
        mem_total: field("MemTotal"),
        mem_available: field("MemAvailable"),
    }
}

/// This machine's [`HostMemory`] now (empty when `/proc/meminfo` cannot be read).
pub fn host_memory() -> HostMemory {
    std::fs::read_to_string("/proc/meminfo")
        .map(|t| parse_meminfo(&t))
        .unwrap_or_default()
}

/// The cgroup's memory limit in bytes (`memory.max` of cgroup v2, or v1's
/// `memory.limit_in_bytes`), when one is set.
pub fn cgroup_memory_limit() -> Option<u64> {
    for p in [
        "/sys/fs/cgroup/memory.max",
        "/sys/fs/cgroup/memory/memory.limit_in_bytes",
    ] {
        if let Ok(t) = std::fs::read_to_string(p) {
            // "max", or v1's "no limit" of about 2^63.
            if let Ok(v) = t.trim().parse::<u64>() {
                if v < 1 << 60 {
                    return Some(v);
                }
            }
        }
    }
    None
}

/// The memory guard: whether `need` bytes of host memory may be pinned. Refuses
/// ([`Error::InvalidInput`], saying why and how to go on) when `need` plus
/// [`HOST_HEADROOM_BYTES`] exceeds a known limit: the cgroup's memory limit, or `ram_hint` (the
/// machine's RAM as the caller knows it). `MemTotal` and `MemAvailable` are not limits on VMs
/// whose memory grows as it is used, so they are only reported. Returns the lines to print.
pub fn check_host_memory(
    need: u64,
    ram_hint: Option<u64>,
    cgroup: Option<u64>,
    mem: HostMemory,
) -> Result<Vec<String>> {
    let gib = |b: u64| format!("{:.1} GiB", b as f64 / GIB);
    let opt = |b: Option<u64>| b.map(gib).unwrap_or_else(|| "unknown".into());
    let mut lines = vec![format!(
        "host memory: need {} pinned; MemTotal {}, MemAvailable {} (on VMs whose memory grows \
         as it is used these are not limits)",
        gib(need),
        opt(mem.mem_total),
        opt(mem.mem_available)
    )];
    let want = need.saturating_add(HOST_HEADROOM_BYTES);
    for (what, limit) in [
        ("the cgroup memory limit", cgroup),
        ("--host-ram-gib", ram_hint),
    ] {
        if let Some(limit) = limit {
            if want > limit {
                return Err(Error::invalid(format!(
                    "memory guard: {} of host buckets plus {} of headroom exceed {what} ({}); \
                     choose a smaller --host-gib, or pass --check-memory false to try anyway",
                    gib(need),
                    gib(HOST_HEADROOM_BYTES),
                    gib(limit)
                )));
            }
            lines.push(format!(
                "memory guard: {} + {} headroom fit {what} ({})",
                gib(need),
                gib(HOST_HEADROOM_BYTES),
                gib(limit)
            ));
        }
    }
    if cgroup.is_none() && ram_hint.is_none() {
        lines.push(
            "memory guard: no limit known (no cgroup limit, no --host-ram-gib); a failed pin is \
             reported as an error"
                .into(),
        );
    }
    Ok(lines)
}

/// One insert batch.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct BatchRow {
    /// Index of the batch's first key in the key sequence.
    pub first: u64,
    /// Keys in the batch.
    pub keys: u64,
    /// Milliseconds of the insert kernel (CUDA events).
    pub ms: f64,
    /// Keys per second, 10^9.
    pub gops: f64,
}

/// The timed lookups of one kind.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct LookupRow {
    /// "find_hit" (present keys) or "find_miss" (absent keys).
    pub op: &'static str,
    /// Queries per run.
    pub queries: u64,
    /// Milliseconds of each run's find kernel (CUDA events).
    pub ms: Vec<f64>,
    /// Queries per second at the median time, 10^9.
    pub gops: f64,
    /// Queries whose found flag was wrong, over all runs.
    pub wrong_found: u64,
    /// Found queries whose value was wrong, over all runs.
    pub wrong_value: u64,
}

/// The result of [`run`].
#[derive(Clone, Debug, serde::Serialize)]
pub struct OutOfCoreReport {
    /// The GPU's name.
    pub device: String,
    /// `sm_XY`.
    pub arch: String,
    /// The GPU's memory in bytes.
    pub gpu_total_memory: u64,
    /// The source revision.
    pub commit: String,
    /// When the run started, UTC.
    pub date: String,
    /// How it was measured, in words.
    pub method: String,
    /// The key type (`u64`) and the value type.
    pub key_type: &'static str,
    /// The value type.
    pub value_type: &'static str,
    /// Stadium ticket size in bits.
    pub ticket_bits: u32,
    /// The load factor asked for.
    pub load_factor_target: f64,
    /// Stored keys over buckets, measured from the table's count.
    pub load_factor: f64,
    /// Sizes of table and batches.
    pub sizes: Sizes,
    /// Where the buckets went (`host`).
    pub location: &'static str,
    /// Host pages of the buckets ("pinned" or "huge").
    pub pages: HostPages,
    /// The kernel's THP mode (`always`, `madvise`, `never`), absent when it has none.
    pub thp_mode: Option<String>,
    /// Bytes of the buckets backed by transparent huge pages after the inserts (smaps).
    pub huge_page_bytes: Option<u64>,
    /// Host bucket bytes over the GPU's memory.
    pub host_over_gpu_memory: f64,
    /// Whether the host buckets alone exceed the GPU's memory.
    pub exceeds_gpu_memory: bool,
    /// Host memory before the table was made.
    pub host_memory_before: HostMemory,
    /// Host memory after the table was made.
    pub host_memory_after: HostMemory,
    /// Seconds to make the table (board, and the host buckets: allocate, zero, pin and map).
    pub table_alloc_s: f64,
    /// Keys stored at the end of the inserts (the table's count).
    pub stored: u64,
    /// Every insert batch.
    pub batches: Vec<BatchRow>,
    /// Keys per second over all batches' insert kernels, 10^9.
    pub insert_gops: f64,
    /// Seconds of the insert kernels together.
    pub insert_kernel_s: f64,
    /// Seconds of the whole insert phase, generation and checks included (wall clock).
    pub insert_wall_s: f64,
    /// Lookups of present keys.
    pub find_hit: LookupRow,
    /// Lookups of absent keys.
    pub find_miss: LookupRow,
    /// Every key placed, every lookup right.
    pub verified: bool,
    /// Seconds from start to end (wall clock).
    pub elapsed_s: f64,
}

/// [`Error::InvalidInput`] unless a kernel's buffers all have the same length.
fn same_lens(what: &str, lens: &[usize]) -> Result<()> {
    if lens.windows(2).any(|w| w[0] != w[1]) {
        return Err(Error::invalid(format!(
            "{what}: buffers of unequal lengths {lens:?}"
        )));
    }
    Ok(())
}

/// The workload kernels of one GPU.
struct Workload {
    gpu: Arc<Gpu>,
    keys_seq: warpmap::device::Kernel,
    keys_sampled: warpmap::device::Kernel,
    values: warpmap::device::Kernel,
    verify: warpmap::device::Kernel,
    grid: u32,
}

impl Workload {
    fn new(gpu: &Arc<Gpu>) -> Result<Self> {
        let m = gpu.module(&workload_source())?;
        Ok(Workload {
            gpu: gpu.clone(),
            keys_seq: m.kernel("wl_keys_seq")?,
            keys_sampled: m.kernel("wl_keys_sampled")?,
            values: m.kernel("wl_values")?,
            verify: m.kernel("wl_verify")?,
            grid: gpu.sm_count().max(1) * (2048 / BLOCK) * 4,
        })
    }

    /// keys[j] = key_at(first + j, seed).
    fn keys_seq(&self, keys: &mut DeviceBuffer<u64>, first: u64, seed: u64) -> Result<()> {
        let (n, mask) = (keys.len() as u64, warpmap::keygen::seed_mask(seed));
        let mut l = self.keys_seq.launch();
        l.buf_mut(keys).arg(&first).arg(&n).arg(&mask);
        // SAFETY: wl_keys_seq(u64* keys, u64 first, u64 n, u64 mask): the arguments match in
        // order and type; the kernel writes keys[0..n), n = keys.len().
        unsafe { l.run(self.grid, BLOCK, 0) }
    }

    /// keys[j] = key_at(i_j, seed) for indices i_j drawn from [0, range).
    fn keys_sampled(
        &self,
        keys: &mut DeviceBuffer<u64>,
        range: u64,
        qseed: u64,
        seed: u64,
    ) -> Result<()> {
        let (n, mask) = (keys.len() as u64, warpmap::keygen::seed_mask(seed));
        let mut l = self.keys_sampled.launch();
        l.buf_mut(keys).arg(&n).arg(&range).arg(&qseed).arg(&mask);
        // SAFETY: wl_keys_sampled(u64* keys, u64 n, u64 range, u64 qseed, u64 mask): the
        // arguments match; the kernel writes keys[0..n), n = keys.len().
        unsafe { l.run(self.grid, BLOCK, 0) }
    }

    /// values[j] = the value of keys[j].
    fn values<V: Value>(
        &self,
        keys: &DeviceBuffer<u64>,
        values: &mut DeviceBuffer<V>,
    ) -> Result<()> {
        same_lens("workload values", &[keys.len(), values.len()])?;
        let (n, words) = (keys.len() as u64, (V::BYTES / 4) as u32);
        let mut l = self.values.launch();
        l.buf(keys).buf_mut(values).arg(&n).arg(&words);
        // SAFETY: wl_values(const u64* keys, u32* values, u64 n, u32 value_words): the arguments
        // match; values holds n * V::BYTES bytes = n * value_words words (lengths checked).
        unsafe { l.run(self.grid, BLOCK, 0) }
    }

    /// `[wrong found flags, wrong values]` of a lookup.
    fn verify<V: Value>(
        &self,
        keys: &DeviceBuffer<u64>,
        values: &DeviceBuffer<V>,
        found: &DeviceBuffer<u8>,
        expect_found: bool,
    ) -> Result<[u64; 2]> {
        same_lens("workload verify", &[keys.len(), values.len(), found.len()])?;
        let mut bad = self.gpu.alloc_filled::<u64>(2, 0)?;
        let (n, words, expect) = (
            keys.len() as u64,
            (V::BYTES / 4) as u32,
            u32::from(expect_found),
        );
        let mut l = self.verify.launch();
        l.buf(keys)
            .buf(values)
            .buf(found)
            .arg(&n)
            .arg(&words)
            .arg(&expect)
            .buf_mut(&mut bad);
        // SAFETY: wl_verify(const u64* keys, const u32* values, const u8* found, u64 n, u32
        // value_words, u32 expect_found, u64* bad): the arguments match; keys, values and found
        // hold n elements (checked), bad holds 2.
        unsafe { l.run(self.grid, BLOCK, 0) }?;
        let b = self.gpu.download(&bad)?;
        Ok([b[0], b[1]])
    }
}

/// Keys `first..first + n` of the seed's sequence, generated on the device (the same keys as
/// [`keygen::key_at`](warpmap::keygen::key_at)`::<u64>`).
pub fn device_keys(gpu: &Arc<Gpu>, first: u64, n: usize, seed: u64) -> Result<DeviceBuffer<u64>> {
    let w = Workload::new(gpu)?;
    let mut k = gpu.alloc::<u64>(n)?;
    w.keys_seq(&mut k, first, seed)?;
    Ok(k)
}

/// The values of `keys` (words of [`value_word`]), generated on the device.
pub fn device_values<V: Value>(
    gpu: &Arc<Gpu>,
    keys: &DeviceBuffer<u64>,
) -> Result<DeviceBuffer<V>> {
    let w = Workload::new(gpu)?;
    let mut v = gpu.alloc::<V>(keys.len())?;
    w.values(keys, &mut v)?;
    Ok(v)
}

/// Builds and queries the table of `cfg` on `gpu`, calling `say` with each step's progress.
/// Errors, never panics: bad configuration ([`sizes`]), memory (device or host), driver and
/// kernel failures, and a table that cannot place its keys ([`Error::TableFull`]). A lookup
/// that gives wrong results is not an error: the report says so (`verified: false`).
pub fn run(
    gpu: &Arc<Gpu>,
    cfg: &OutOfCoreConfig,
    say: &mut dyn FnMut(String),
) -> Result<OutOfCoreReport> {
    match cfg.value_bytes {
        8 => run_typed::<u64>(gpu, cfg, say),
        32 => run_typed::<[u8; 32]>(gpu, cfg, say),
        64 => run_typed::<[u8; 64]>(gpu, cfg, say),
        128 => run_typed::<[u8; 128]>(gpu, cfg, say),
        256 => run_typed::<[u8; 256]>(gpu, cfg, say),
        other => Err(Error::invalid(format!(
            "value width {other} bytes: one of {VALUE_BYTES:?}"
        ))),
    }
}

/// The method text of the report.
pub fn method(cfg: &OutOfCoreConfig, s: &Sizes) -> String {
    format!(
        "Stadium table, u64 keys and {vb}-byte values ({rb}-byte buckets), {t}-bit tickets, \
         ticket board in GPU memory and buckets in host memory mapped into the GPU ({pages} \
         pages). Keys: keygen's injective u64 sequence, generated on the device; values: a hash \
         of the key. Inserts: {batches} batches of {bk} keys (at most 2^{bl}) to load factor {lf}, each \
         timed with CUDA events around the insert kernel alone. Lookups: {runs} runs each of \
         {q} present keys (sampled from the inserted ones, values verified on the device) and \
         {q} absent keys (later indices of the sequence; found must be false), fresh keys each \
         run, timed around the find kernel; the median counts.",
        vb = cfg.value_bytes,
        rb = s.record_bytes,
        t = cfg.ticket_bits,
        pages = cfg.pages,
        batches = s.batches,
        bl = cfg.batch_log2,
        bk = s.batch_keys,
        lf = cfg.load_factor,
        runs = cfg.runs,
        q = s.queries,
    )
}

fn run_typed<V: Value>(
    gpu: &Arc<Gpu>,
    cfg: &OutOfCoreConfig,
    say: &mut dyn FnMut(String),
) -> Result<OutOfCoreReport> {
    let started = Instant::now();
    let date = utc_now();
    let s = sizes(cfg)?;
    let gib = |b: u64| b as f64 / GIB;
    let total = gpu.total_memory();
    say(format!(
        "table: {} buckets of {} bytes = {:.2} GiB in host memory ({:.2}x the GPU's {:.2} GiB), \
         board {:.2} GiB on the GPU; {} keys in {} batches",
        s.buckets,
        s.record_bytes,
        gib(s.host_bucket_bytes),
        s.host_bucket_bytes as f64 / total as f64,
        gib(total),
        gib(s.board_bytes),
        s.keys,
        s.batches
    ));
    let free = gpu.free_memory()?;
    if s.board_bytes + s.batch_device_bytes > free {
        return Err(Error::OutOfMemory {
            requested_bytes: s.board_bytes + s.batch_device_bytes,
            free_bytes: free,
        });
    }
    let w = Workload::new(gpu)?;
    let host_memory_before = host_memory();
    let t0 = Instant::now();
    say(format!(
        "making the table: pinning {:.2} GiB of {} host pages ...",
        gib(s.host_bucket_bytes),
        cfg.pages
    ));
    let config = StadiumConfig::new(s.buckets as usize)
        .ticket_bits(cfg.ticket_bits)
        .location(Location::Host)
        .host_pages(cfg.pages)
        .seed(warpmap::hash::fmix64(cfg.seed ^ 0x5eed));
    let mut table = Stadium::<u64, V>::new(gpu.clone(), config)?;
    let table_alloc_s = t0.elapsed().as_secs_f64();
    let host_memory_after = host_memory();
    if table.size() as u64 != s.buckets || table.location() != Location::Host {
        return Err(Error::KernelStatus {
            kernel: "outofcore".into(),
            bits: 0,
            names: format!(
                "the table has {} buckets at {:?}, the plan {} in host memory",
                table.size(),
                table.location(),
                s.buckets
            ),
        });
    }
    say(format!("table made in {table_alloc_s:.1} s"));

    // Inserts.
    let t_ins = Instant::now();
    let timer = gpu.timer()?;
    let batch = s.batch_keys;
    let mut keys = gpu.alloc::<u64>(batch as usize)?;
    let mut values = gpu.alloc::<V>(batch as usize)?;
    let mut rows = Vec::with_capacity(s.batches as usize);
    let mut first = 0u64;
    while first < s.keys {
        let nb = batch.min(s.keys - first);
        if nb as usize != keys.len() {
            keys = gpu.alloc::<u64>(nb as usize)?;
            values = gpu.alloc::<V>(nb as usize)?;
        }
        w.keys_seq(&mut keys, first, cfg.seed)?;
        w.values(&keys, &mut values)?;
        timer.start()?;
        table.insert_device_async(&keys, &values, None)?;
        let ms = timer.stop_ms()?;
        table.synchronize()?; // a key that could not be placed: TableFull
        let gops = nb as f64 / (ms * 1e6);
        rows.push(BatchRow {
            first,
            keys: nb,
            ms,
            gops,
        });
        first += nb;
        say(format!(
            "insert batch {}/{}: {nb} keys in {ms:.1} ms = {gops:.4} G/s (load {:.3}, {:.0} s)",
            rows.len(),
            s.batches,
            first as f64 / s.buckets as f64,
            started.elapsed().as_secs_f64()
        ));
    }
    drop((keys, values));
    let insert_wall_s = t_ins.elapsed().as_secs_f64();
    let insert_kernel_s = rows.iter().map(|r| r.ms).sum::<f64>() / 1e3;
    let stored = table.len()? as u64;
    let huge_page_bytes = table.host_huge_page_bytes();

    // Lookups.
    let q = s.queries as usize;
    let mut qkeys = gpu.alloc::<u64>(q)?;
    let mut out = gpu.alloc::<V>(q)?;
    let mut found = gpu.alloc::<u8>(q)?;
    let mut lookup = |hit: bool, say: &mut dyn FnMut(String)| -> Result<LookupRow> {
        let op = if hit { "find_hit" } else { "find_miss" };
        let mut row = LookupRow {
            op,
            queries: q as u64,
            ms: Vec::new(),
            gops: 0.0,
            wrong_found: 0,
            wrong_value: 0,
        };
        for r in 0..cfg.runs {
            if hit {
                let qseed = warpmap::hash::fmix64(cfg.seed ^ 0xf1d0 ^ (r as u64) << 32);
                w.keys_sampled(&mut qkeys, s.keys, qseed, cfg.seed)?;
            } else {
                w.keys_seq(&mut qkeys, s.keys + r as u64 * q as u64, cfg.seed)?;
            }
            gpu.fill_bytes(&mut found, 0xee)?;
            timer.start()?;
            table.find_device_async(&qkeys, &mut out, &mut found)?;
            let ms = timer.stop_ms()?;
            table.synchronize()?;
            let [f, v] = w.verify(&qkeys, &out, &found, hit)?;
            row.ms.push(ms);
            row.wrong_found += f;
            row.wrong_value += v;
            say(format!(
                "{op} run {}/{}: {q} queries in {ms:.1} ms = {:.4} G/s, {f} wrong found, {v} \
                 wrong values",
                r + 1,
                cfg.runs,
                q as f64 / (ms * 1e6)
            ));
        }
        row.gops = q as f64 / (median(&row.ms) * 1e6);
        Ok(row)
    };
    let find_hit = lookup(true, say)?;
    let find_miss = lookup(false, say)?;
    drop((qkeys, out, found));

    let verified = stored == s.keys
        && find_hit.wrong_found + find_hit.wrong_value + find_miss.wrong_found == 0;
    let report = OutOfCoreReport {
        device: gpu.name().to_string(),
        arch: format!("sm_{}", gpu.sm()),
        gpu_total_memory: total,
        commit: cfg.commit.clone(),
        date,
        method: method(cfg, &s),
        key_type: "u64",
        value_type: V::NAME,
        ticket_bits: cfg.ticket_bits,
        load_factor_target: cfg.load_factor,
        load_factor: stored as f64 / s.buckets as f64,
        sizes: s,
        location: "host",
        pages: cfg.pages,
        thp_mode: transparent_huge_pages(),
        huge_page_bytes,
        host_over_gpu_memory: s.host_bucket_bytes as f64 / total as f64,
        exceeds_gpu_memory: s.host_bucket_bytes > total,
        host_memory_before,
        host_memory_after,
        table_alloc_s,
        stored,
        insert_gops: s.keys as f64 / (insert_kernel_s * 1e9),
        insert_kernel_s,
        insert_wall_s,
        batches: rows,
        find_hit,
        find_miss,
        verified,
        elapsed_s: 0.0,
    };
    let t_drop = Instant::now();
    drop(table);
    say(format!(
        "table freed in {:.1} s",
        t_drop.elapsed().as_secs_f64()
    ));
    Ok(OutOfCoreReport {
        elapsed_s: started.elapsed().as_secs_f64(),
        ..report
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_sizes_exceed_an_h100_and_fit_stadium() {
        let s = sizes(&OutOfCoreConfig::default()).unwrap();
        assert_eq!(s.record_bytes, 136);
        // 90 GiB / 136 B = 710.5 M buckets, below 2^32 - 5.
        assert!(s.buckets > 710_000_000 && s.buckets < 711_000_000, "{s:?}");
        assert!(s.buckets < u32::MAX as u64 - 4);
        // More than the H100's 81559 MiB.
        assert!(s.host_bucket_bytes > 81_559u64 << 20);
        assert!(s.host_bucket_bytes >= 90 << 30);
        // 0.85 of the buckets, in batches of 2^26.
        assert_eq!(s.keys, (0.85 * s.buckets as f64).round() as u64);
        assert_eq!(s.batches, s.keys.div_ceil(1 << 26));
        // 90 GiB * 0.85 / 136 B is 9 * 2^26 exactly; the prime adds a few keys: a 10th batch,
        // and the keys are spread evenly over the ten.
        assert_eq!(s.batches, 10);
        assert_eq!(s.batch_keys, s.keys.div_ceil(10));
        assert!(s.batch_keys <= 1 << 26);
        // 8-bit tickets: 3 per word.
        assert_eq!(s.board_bytes, s.buckets.div_ceil(3) * 4);
        assert!(s.board_bytes < 1 << 30);
        // Lookup buffers (2^26 * 137 bytes) are larger than the insert buffers.
        assert_eq!(s.batch_device_bytes, (1u64 << 26) * 137);
    }

    #[test]
    fn bad_configurations_are_errors() {
        let d = OutOfCoreConfig::default();
        let bad = |c: OutOfCoreConfig| sizes(&c).err();
        assert!(matches!(
            bad(OutOfCoreConfig {
                value_bytes: 8,
                ..d.clone()
            }),
            Some(Error::Unsupported(_))
        ));
        for c in [
            OutOfCoreConfig {
                value_bytes: 12,
                ..d.clone()
            },
            OutOfCoreConfig {
                load_factor: 0.0,
                ..d.clone()
            },
            OutOfCoreConfig {
                load_factor: 1.5,
                ..d.clone()
            },
            OutOfCoreConfig {
                load_factor: f64::NAN,
                ..d.clone()
            },
            OutOfCoreConfig {
                ticket_bits: 3,
                ..d.clone()
            },
            OutOfCoreConfig {
                batch_log2: 40,
                ..d.clone()
            },
            OutOfCoreConfig {
                query_log2: 2,
                ..d.clone()
            },
            OutOfCoreConfig {
                runs: 0,
                ..d.clone()
            },
            OutOfCoreConfig {
                host_bytes: 100,
                ..d.clone()
            },
        ] {
            assert!(
                matches!(bad(c.clone()), Some(Error::InvalidInput(_))),
                "{c:?}"
            );
        }
        // Small tables work, queries capped by the keys.
        let s = sizes(&OutOfCoreConfig {
            host_bytes: 1 << 20,
            ..d
        })
        .unwrap();
        assert_eq!(s.queries, s.keys);
        assert_eq!(s.batches, 1);
    }

    #[test]
    fn meminfo_and_the_guard() {
        let m =
            parse_meminfo("MemTotal:       16384 kB\nMemFree: 1 kB\nMemAvailable:    8192 kB\n");
        assert_eq!(m.mem_total, Some(16 << 20));
        assert_eq!(m.mem_available, Some(8 << 20));
        assert_eq!(parse_meminfo("junk"), HostMemory::default());
        let gib = 1u64 << 30;
        // MemTotal alone never refuses.
        let small = HostMemory {
            mem_total: Some(4 * gib),
            mem_available: Some(2 * gib),
        };
        let lines = check_host_memory(90 * gib, None, None, small).unwrap();
        assert!(lines[0].contains("not limits"), "{lines:?}");
        assert!(check_host_memory(90 * gib, Some(125 * gib), None, small).is_ok());
        assert!(matches!(
            check_host_memory(120 * gib, Some(125 * gib), None, small),
            Err(Error::InvalidInput(_))
        ));
        assert!(matches!(
            check_host_memory(90 * gib, None, Some(64 * gib), small),
            Err(Error::InvalidInput(_))
        ));
    }

    #[test]
    fn value_words_differ_by_key_and_word() {
        let a: Vec<u32> = (0..8).map(|w| value_word(1, w)).collect();
        let b: Vec<u32> = (0..8).map(|w| value_word(2, w)).collect();
        assert_ne!(a, b);
        assert!(a.windows(2).any(|p| p[0] != p[1]));
    }
}
