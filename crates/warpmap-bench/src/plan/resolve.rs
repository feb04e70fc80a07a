//! A [`BenchConfig`] resolved into the [`Plan`] that runs ([`resolve`]: presets expanded,
//! defaults filled in, limits applied), what the plan measures (its variants, sets and key
//! counts), and how it describes itself (the summary printed before the run, the report's
//! method text).

use super::estimate::human_bytes;
use super::{
    dedup_in_place, BenchConfig, Distribution, KvType, Op, Preset, ZipfInfo, ZipfLoad,
    CPU_MAX_KEYS_LOG2, DEFAULT_LOAD_FACTORS, DEFAULT_SLICE_LOG2, DEFAULT_ZIPF_UNIVERSE_LOG2,
    GPU_MAX_KEYS_LOG2, QUICK_KEYS_LOG2,
};
use crate::experiments::method_for;
use crate::harness::workloads::run_seed;
use crate::schemes::stadium::location_name;
use crate::schemes::two_level::TwoLevelShape;
use crate::schemes::{Scheme, Variant};
use warpmap::table::stadium::{Location, TICKET_BITS};
use warpmap::table::two_level;
use warpmap::table::warpdrive::{DEFAULT_GROUP_SIZE, GROUP_SIZES};
use warpmap::table::Backend;
use warpmap::{Error, Result};

/// A resolved benchmark: every choice made. See [`resolve`].
#[derive(Clone, Debug)]
pub struct Plan {
    /// The backend it is for.
    pub backend: Backend,
    /// `--quick`.
    pub quick: bool,
    /// The preset it came from.
    pub preset: Option<Preset>,
    /// Fixed-slots mode: slots asked for per table; fixed-keys mode: `ceil(n / smallest lf)`.
    pub slots: usize,
    /// Fixed-keys mode: `n = 2^keys_log2` keys per set.
    pub keys_log2: Option<u32>,
    /// Timed runs per set.
    pub runs: usize,
    /// Load factors, in order.
    pub load_factors: Vec<f64>,
    /// WarpDrive group sizes (empty on the CPU backend, which has none).
    pub group_sizes: Vec<u32>,
    /// Key distributions.
    pub distributions: Vec<Distribution>,
    /// Key/value types.
    pub types: Vec<KvType>,
    /// Operations with a row (insert runs in every run regardless: the others need the keys).
    pub ops: Vec<Op>,
    /// The base seed.
    pub seed: u64,
    /// Zipf exponent.
    pub zipf_s: f64,
    /// Zipf universe, log2 of the rank count.
    pub zipf_universe_log2: u32,
    /// What a Zipf set's load factor means.
    pub zipf_load: ZipfLoad,
    /// WarpDrive's overflow filter.
    pub overflow_filter: warpmap::table::warpdrive::OverflowFilter,
    /// The GPU scheme (the CPU backend measures `CpuTable` whatever it is).
    pub scheme: Scheme,
    /// Stadium ticket sizes (empty unless Stadium on a GPU).
    pub ticket_bits: Vec<u32>,
    /// Stadium bucket locations (empty unless Stadium on a GPU).
    pub locations: Vec<Location>,
    /// Fixed keys, Stadium host buckets, unique keys: `n = 2^min(keys_log2, this)`.
    pub host_keys_log2: Option<u32>,
    /// The mixed experiment ([`Op::Mixed`]): operations per slice, log2, a set per size (empty
    /// otherwise).
    pub slice_log2: Vec<u32>,
    /// two_level bucket shapes (empty unless two_level on a GPU).
    pub two_level_shapes: Vec<TwoLevelShape>,
    /// Adjustments made to what was asked (caps, ignored flags), for the report.
    pub notes: Vec<String>,
}

/// Resolves a configuration for a backend: the preset's values where the configuration leaves
/// a field `None`, defaults, validation, and the CPU backend's limits.
pub fn resolve(cfg: &BenchConfig, backend: Backend) -> Result<Plan> {
    let gpu = backend == Backend::Gpu;
    let mut notes = Vec::new();
    let pd = cfg.preset.map(Preset::defaults);
    let pd = pd.as_ref();

    let runs = cfg
        .runs
        .or_else(|| pd.filter(|_| !cfg.quick).map(|p| p.runs))
        .unwrap_or(if cfg.quick { 3 } else { 5 });
    if runs == 0 {
        return Err(Error::invalid("runs must be at least 1"));
    }

    let mut keys_log2 = cfg.keys_log2.or_else(|| {
        pd.map(|p| {
            if cfg.quick {
                p.keys_log2.min(QUICK_KEYS_LOG2)
            } else {
                p.keys_log2
            }
        })
    });
    if let Some(k) = keys_log2 {
        if !(4..=GPU_MAX_KEYS_LOG2).contains(&k) {
            return Err(Error::invalid(format!(
                "keys 2^{k}: use --keys-log2 4 to {GPU_MAX_KEYS_LOG2}"
            )));
        }
        if !gpu && k > CPU_MAX_KEYS_LOG2 {
            notes.push(format!(
                "keys-log2 {k} capped at {CPU_MAX_KEYS_LOG2} on the CPU backend \
                 (2^{k} keys per set would take minutes per operation on host threads)"
            ));
            keys_log2 = Some(CPU_MAX_KEYS_LOG2);
        }
        if cfg.slots_log2.is_some() {
            notes.push("--slots-log2 is ignored with --keys-log2 (capacity = ceil(n / lf))".into());
        }
    }

    let default_slots_log2 = match (gpu, cfg.quick) {
        (true, false) => 26,
        (true, true) => 18,
        (false, false) => 22,
        (false, true) => 18,
    };
    let slots_log2 = cfg.slots_log2.unwrap_or(default_slots_log2);
    if keys_log2.is_none() && !(4..=32).contains(&slots_log2) {
        return Err(Error::invalid(format!(
            "table size 2^{slots_log2}: use 2^4 to 2^32 slots"
        )));
    }

    let load_factors = cfg
        .load_factors
        .clone()
        .or_else(|| pd.map(|p| p.load_factors.clone()))
        .unwrap_or_else(|| DEFAULT_LOAD_FACTORS.to_vec());
    if load_factors.is_empty() {
        return Err(Error::invalid("no load factor to measure"));
    }
    if let Some(bad) = load_factors.iter().find(|lf| !(**lf > 0.0 && **lf <= 1.0)) {
        return Err(Error::invalid(format!(
            "load factor {bad} is not in (0, 1]"
        )));
    }

    let mut group_sizes = match (pd, &cfg.group_sizes) {
        (Some(p), Some(given)) if p.add_given_group_sizes => {
            let mut v = p.group_sizes.clone();
            v.extend(given);
            v
        }
        (_, Some(given)) => given.clone(),
        (Some(p), None) => p.group_sizes.clone(),
        (None, None) => vec![DEFAULT_GROUP_SIZE],
    };
    if group_sizes.is_empty() {
        return Err(Error::invalid("no group size to measure"));
    }
    if let Some(bad) = group_sizes.iter().find(|g| !GROUP_SIZES.contains(g)) {
        return Err(Error::invalid(format!(
            "group size {bad} is not one of {GROUP_SIZES:?}"
        )));
    }
    group_sizes.sort_unstable();
    group_sizes.dedup();
    if !gpu {
        if group_sizes != [DEFAULT_GROUP_SIZE] {
            notes.push(format!(
                "group sizes {group_sizes:?} apply to WarpDrive on a GPU only: the CPU backend \
                 measures one CpuTable per set (rows without group_size)"
            ));
        }
        group_sizes.clear();
    }

    let mut distributions = cfg
        .distributions
        .clone()
        .or_else(|| pd.map(|p| p.distributions.clone()))
        .unwrap_or_else(|| vec![Distribution::Unique]);
    dedup_in_place(&mut distributions);
    if distributions.is_empty() {
        return Err(Error::invalid("no key distribution to measure"));
    }
    let mut types = cfg
        .types
        .clone()
        .or_else(|| pd.map(|p| p.types.clone()))
        .unwrap_or_else(|| KvType::ALL.to_vec());
    dedup_in_place(&mut types);
    if types.is_empty() {
        return Err(Error::invalid("no key/value type to measure"));
    }
    let asked_ops = cfg
        .ops
        .clone()
        .or_else(|| pd.map(|p| p.ops.clone()))
        .unwrap_or_else(|| Op::DEFAULT.to_vec());
    let mixed = asked_ops.contains(&Op::Mixed);
    if mixed && asked_ops.iter().any(|o| *o != Op::Mixed) {
        return Err(Error::invalid(
            "mixed is an experiment of its own (mixed vs phase-separated batches): give \
             --ops mixed alone",
        ));
    }
    let ops: Vec<Op> = if mixed {
        vec![Op::Mixed]
    } else {
        Op::ALL
            .into_iter()
            .filter(|op| asked_ops.contains(op))
            .collect()
    };
    if ops.is_empty() {
        return Err(Error::invalid("no operation to measure"));
    }
    let slice_log2 = if mixed {
        if keys_log2.is_none() {
            return Err(Error::invalid(
                "--ops mixed needs fixed keys: give --keys-log2 (the fig15 preset uses 24)",
            ));
        }
        if distributions != [Distribution::Unique] {
            return Err(Error::invalid(
                "--ops mixed measures unique keys only (each find asks for a key inserted once, \
                 by an earlier slice): use --distribution unique",
            ));
        }
        let mut v = cfg
            .slice_log2
            .clone()
            .or_else(|| pd.and_then(|p| p.slice_log2.clone()))
            .unwrap_or_else(|| DEFAULT_SLICE_LOG2.to_vec());
        if cfg.quick && cfg.slice_log2.is_none() {
            v = vec![12];
        }
        if v.is_empty() {
            return Err(Error::invalid("no slice size to measure"));
        }
        if let Some(bad) = v.iter().find(|s| !(1..=GPU_MAX_KEYS_LOG2).contains(s)) {
            return Err(Error::invalid(format!(
                "slice 2^{bad} operations: use --slice-log2 1 to {GPU_MAX_KEYS_LOG2}"
            )));
        }
        v.sort_unstable();
        v.dedup();
        let k = keys_log2.unwrap_or(0);
        if let Some(s) = v.iter().find(|s| k + 1 > **s + 16) {
            return Err(Error::invalid(format!(
                "slices of 2^{s} operations over 2^{k} keys make 2^{} slices: at most 2^16; use \
                 --slice-log2 {} or more",
                k + 1 - s,
                k + 1 - 16
            )));
        }
        v
    } else {
        if cfg.slice_log2.is_some() {
            notes.push(
                "--slice-log2 applies to --ops mixed (the fig15 preset) only: ignored".into(),
            );
        }
        Vec::new()
    };

    let scheme = cfg
        .scheme
        .or_else(|| pd.and_then(|p| p.scheme))
        .unwrap_or_default();
    let mut ticket_bits = cfg
        .ticket_bits
        .clone()
        .or_else(|| pd.and_then(|p| p.ticket_bits.clone()))
        .unwrap_or_else(|| vec![8]);
    if let Some(bad) = ticket_bits.iter().find(|t| !TICKET_BITS.contains(t)) {
        return Err(Error::invalid(format!(
            "ticket size {bad} bits is not one of {TICKET_BITS:?}"
        )));
    }
    ticket_bits.sort_unstable();
    ticket_bits.dedup();
    let mut locations = cfg
        .locations
        .clone()
        .or_else(|| pd.and_then(|p| p.locations.clone()))
        .unwrap_or_else(|| vec![Location::Device]);
    dedup_in_place(&mut locations);
    if ticket_bits.is_empty() || locations.is_empty() {
        return Err(Error::invalid(
            "no ticket size or bucket location to measure",
        ));
    }
    let mut host_keys_log2 = cfg
        .host_keys_log2
        .or_else(|| pd.and_then(|p| p.host_keys_log2));
    if let Some(h) = host_keys_log2 {
        if !(4..=GPU_MAX_KEYS_LOG2).contains(&h) {
            return Err(Error::invalid(format!(
                "host keys 2^{h}: use --host-keys-log2 4 to {GPU_MAX_KEYS_LOG2}"
            )));
        }
    }
    let stadium_flags = cfg.ticket_bits.is_some() || cfg.locations.is_some();
    let mut two_level_shapes = cfg
        .two_level_shapes
        .clone()
        .or_else(|| pd.and_then(|p| p.two_level_shapes.clone()))
        .unwrap_or_else(|| vec![TwoLevelShape::DEFAULT]);
    dedup_in_place(&mut two_level_shapes);
    if scheme != Scheme::TwoLevel || !gpu {
        if cfg.two_level_shapes.is_some() {
            notes.push("--two-level-shapes applies to --scheme two_level on a GPU: ignored".into());
        }
        two_level_shapes.clear();
    }
    match (scheme, gpu) {
        (Scheme::Slab, _) => {
            return Err(Error::invalid(
                "scheme slab is measured by its own presets (slab-fig4, slab-fig5, slab-fig6, \
                 slab-fig7, slab-alloc, slab-compare): warpmap bench --scheme slab --preset \
                 NAME (plan::resolve_slab, experiments::run_slab)",
            ));
        }
        (Scheme::DyCuckoo, _) => {
            return Err(Error::invalid(
                "scheme dycuckoo is measured by its own presets (dycuckoo-static, \
                 dycuckoo-dynamic, dycuckoo-compare, dycuckoo-sweep): warpmap bench --scheme dycuckoo --preset \
                 NAME (plan::resolve_dycuckoo, experiments::run_dycuckoo)",
            ));
        }
        (Scheme::Sharded, _) => {
            return Err(Error::invalid(
                "scheme sharded is measured by its own run: warpmap bench --scheme sharded \
                 --gpus N --shards-per-gpu M,... (experiments::run_sharded)",
            ));
        }
        (Scheme::TwoLevel, _) => {
            if stadium_flags || cfg.host_keys_log2.is_some() {
                notes.push(
                    "--ticket-bits, --location and --host-keys-log2 apply to --scheme stadium \
                     only: ignored"
                        .into(),
                );
            }
            if gpu {
                if cfg.group_sizes.is_some() {
                    notes.push(
                        "--group-sizes applies to WarpDrive only: ignored by two_level".into(),
                    );
                }
                group_sizes.clear();
                if let Some(bad) = types
                    .iter()
                    .find(|t| !two_level::supports_widths(t.key_bytes(), t.value_bytes()))
                {
                    return Err(Error::invalid(format!(
                        "two_level stores keys and values of 4 or 8 bytes, not type {bad}"
                    )));
                }
                if ops.contains(&Op::Mixed) {
                    return Err(Error::invalid(
                        "two_level refuses mixed batches on the GPU (an insert rebuilds whole \
                         buckets in place): measure insert and find separately",
                    ));
                }
            } else {
                notes.push(
                    "scheme two_level: the CPU backend measures CpuTable (rows with scheme \
                     \"cpu\"); bucket shapes are ignored"
                        .into(),
                );
            }
            ticket_bits.clear();
            locations.clear();
            host_keys_log2 = None;
        }
        (Scheme::WarpDrive, _) => {
            if stadium_flags || cfg.host_keys_log2.is_some() {
                notes.push(
                    "--ticket-bits, --location and --host-keys-log2 apply to --scheme stadium \
                     only: ignored"
                        .into(),
                );
            }
            ticket_bits.clear();
            locations.clear();
            host_keys_log2 = None;
        }
        (Scheme::Stadium, false) => {
            notes.push(
                "scheme stadium runs on a GPU only: the CPU backend measures CpuTable (rows \
                 with scheme \"cpu\"); ticket sizes and bucket locations are ignored"
                    .into(),
            );
            if locations.contains(&Location::Host) {
                notes.push(
                    "--location host (out-of-core buckets in pinned host memory) needs a GPU: \
                     nothing out-of-core is measured on the CPU backend"
                        .into(),
                );
            }
            ticket_bits.clear();
            locations.clear();
            host_keys_log2 = None;
        }
        (Scheme::Stadium, true) => {
            if cfg.group_sizes.is_some() {
                notes.push("--group-sizes applies to WarpDrive only: ignored by stadium".into());
            }
            group_sizes.clear();
            if !locations.contains(&Location::Host) {
                host_keys_log2 = None;
            }
            if let (Some(h), Some(k)) = (host_keys_log2, keys_log2) {
                if h < k {
                    notes.push(format!(
                        "host-bucket (out-of-core) rows with unique keys use n = 2^{h} keys \
                         (device rows 2^{k}): random accesses over the bus run at 0.04-0.45 G/s"
                    ));
                } else {
                    host_keys_log2 = None;
                }
            }
        }
    }

    let keys = keys_log2.map(|k| 1usize << k);
    let slots = match keys {
        Some(n) => {
            let lf_min = load_factors.iter().copied().fold(1.0, f64::min);
            (n as f64 / lf_min).ceil() as usize
        }
        None => 1usize << slots_log2,
    };
    let zipf_universe_log2 = cfg.zipf_universe_log2.unwrap_or(DEFAULT_ZIPF_UNIVERSE_LOG2);
    if distributions.contains(&Distribution::Zipf) {
        if !(cfg.zipf_s.is_finite() && cfg.zipf_s > 0.0) {
            return Err(Error::invalid(format!(
                "zipf exponent {} must be finite and > 0",
                cfg.zipf_s
            )));
        }
        if !(1..=62).contains(&zipf_universe_log2) {
            return Err(Error::invalid(format!(
                "zipf universe 2^{zipf_universe_log2}: use 2^1 to 2^62 ranks"
            )));
        }
        // Drawn keys are indices 0..U of the key bijection, absent keys U..U+n: all must be
        // distinct keys of the type (keygen's sequence has 2^32 keys for 4-byte keys, 2^64 for
        // wider ones).
        let n_max = keys.unwrap_or(slots) as u128;
        let absent = if ops.contains(&Op::FindMiss) {
            n_max
        } else {
            0
        };
        for t in &types {
            let space = 1u128 << (8 * t.key_bytes()).min(64);
            if (1u128 << zipf_universe_log2) + absent > space {
                return Err(Error::invalid(format!(
                    "zipf universe 2^{zipf_universe_log2} (+ {absent} absent keys) exceeds the \
                     {space} distinct {}-byte keys of type {}",
                    t.key_bytes(),
                    t.name()
                )));
            }
        }
        if keys.is_none() {
            notes.push(
                "zipf with fixed slots: load factor = inserted keys / capacity (the paper's \
                 target load); the rows' occupancy = distinct / capacity"
                    .into(),
            );
        }
    }

    Ok(Plan {
        slice_log2,
        two_level_shapes,
        backend,
        quick: cfg.quick,
        preset: cfg.preset,
        slots,
        keys_log2,
        runs,
        load_factors,
        group_sizes,
        distributions,
        types,
        ops,
        seed: cfg.seed,
        zipf_s: cfg.zipf_s,
        zipf_universe_log2,
        zipf_load: cfg.zipf_load,
        overflow_filter: cfg.overflow_filter,
        scheme,
        ticket_bits,
        locations,
        host_keys_log2: host_keys_log2.filter(|_| keys_log2.is_some()),
        notes,
    })
}

impl Plan {
    /// Fixed-keys mode: `n`.
    pub fn keys(&self) -> Option<usize> {
        self.keys_log2.map(|k| 1usize << k)
    }

    /// The group sizes a set loop runs over: `Some(g)` per group size on a GPU, one `None` on
    /// the CPU.
    pub fn group_slots(&self) -> Vec<Option<u32>> {
        if self.group_sizes.is_empty() {
            vec![None]
        } else {
            self.group_sizes.iter().map(|&g| Some(g)).collect()
        }
    }

    /// Whether this is the mixed experiment ([`Op::Mixed`], the fig15 preset).
    pub fn mixed(&self) -> bool {
        self.ops.contains(&Op::Mixed)
    }

    /// The tables a set loop runs over per (type, distribution, load factor): a WarpDrive per
    /// group size, a Stadium per (location, ticket size), or the CPU table. The mixed
    /// experiment with Stadium device buckets adds WarpDrive (default group size) for
    /// comparison.
    pub fn variants(&self) -> Vec<Variant> {
        if self.backend == Backend::Cpu {
            return vec![Variant::Cpu];
        }
        let mut v = self.scheme.variants(self);
        if self.mixed()
            && self.scheme == Scheme::Stadium
            && self.locations.contains(&Location::Device)
        {
            v.push(Variant::WarpDrive {
                group: DEFAULT_GROUP_SIZE,
            });
        }
        v
    }

    /// Fixed keys: `n` of a variant's sets (host-bucket Stadium tables with unique keys:
    /// capped by `host_keys_log2`).
    pub fn keys_for_variant(&self, v: Variant, dist: Distribution) -> Option<usize> {
        match v {
            Variant::Stadium {
                location: Location::Host,
                ..
            } => self.host_keys(dist),
            _ => self.keys(),
        }
    }

    /// Fixed keys: `n` of the host-bucket Stadium sets of a distribution.
    pub fn host_keys(&self, dist: Distribution) -> Option<usize> {
        let n = self.keys()?;
        Some(match (dist, self.host_keys_log2) {
            (Distribution::Unique, Some(h)) => n.min(1 << h),
            _ => n,
        })
    }

    /// Measured sets: types x distributions x variants x load factors (x slice sizes in the
    /// mixed experiment).
    pub fn sets(&self) -> usize {
        self.types.len()
            * self.distributions.len()
            * self.variants().len()
            * self.load_factors.len()
            * self.slice_log2.len().max(1)
    }

    /// Whether absent keys are needed (find_miss or find_half selected).
    pub fn needs_misses(&self) -> bool {
        self.ops.contains(&Op::FindMiss) || self.needs_half()
    }

    /// Whether half-present queries are needed (find_half selected).
    pub fn needs_half(&self) -> bool {
        self.ops.contains(&Op::FindHalf)
    }

    /// The Zipf universe (ranks).
    pub fn zipf_universe(&self) -> u64 {
        1u64 << self.zipf_universe_log2
    }

    /// The Zipf parameters, when Zipf keys are measured.
    pub fn zipf_info(&self) -> Option<ZipfInfo> {
        self.distributions
            .contains(&Distribution::Zipf)
            .then(|| ZipfInfo {
                s: self.zipf_s,
                universe_log2: self.zipf_universe_log2,
                load: if self.keys_log2.is_some() {
                    self.zipf_load
                } else {
                    ZipfLoad::Inserted
                },
            })
    }

    /// Fixed-keys mode: the capacity asked for a set of `n` keys (of which `distinct` are
    /// distinct) at load factor `lf`.
    pub fn capacity_for(&self, n: usize, distinct: usize, lf: f64, dist: Distribution) -> usize {
        let m = match (dist, self.zipf_load) {
            (Distribution::Zipf, ZipfLoad::Distinct) => distinct,
            _ => n,
        };
        ((m as f64 / lf).ceil() as usize).max(1)
    }

    /// The seed of one run's key set. Fixed slots: distinct per (type, distribution, load
    /// factor, run), as before (`n` depends on the load factor). Fixed keys: independent of the
    /// load factor and group size, so every table of a (type, distribution) sees the same
    /// `runs` key sets and each set is generated once.
    pub(crate) fn seed_for(&self, type_tag: u64, dist: Distribution, li: usize, r: usize) -> u64 {
        let d = match dist {
            Distribution::Unique => 0,
            Distribution::Zipf => 0x2f1f_0000,
        };
        match self.keys_log2 {
            None => run_seed(self.seed, type_tag ^ d, li, r),
            Some(_) => run_seed(self.seed, type_tag ^ d ^ (0x6b65_7973 << 32), usize::MAX, r),
        }
    }

    /// A few lines on what runs, for printing before the run starts.
    pub fn summary(&self) -> String {
        let list = |v: Vec<String>| v.join(",");
        let mut out = String::new();
        if let Some(p) = self.preset {
            out += &format!("preset {p}: {}\n", p.description());
        }
        match self.keys_log2 {
            Some(k) => {
                out += &format!(
                    "fixed keys: n = 2^{k} = {} keys per set, capacity = ceil(n / lf){}, a new \
                     table per set\n",
                    1usize << k,
                    if self.distributions.contains(&Distribution::Zipf)
                        && self.zipf_load == ZipfLoad::Distinct
                    {
                        " (zipf: ceil(distinct / lf))"
                    } else {
                        ""
                    }
                )
            }
            None => {
                out += &format!(
                    "fixed slots: 2^{} = {} slots per table, n = lf x capacity\n",
                    self.slots.trailing_zeros(),
                    self.slots
                )
            }
        }
        out += &format!(
            "load factors {}; {}; distributions {}; types {}; ops {}; {} runs\n",
            list(self.load_factors.iter().map(|x| x.to_string()).collect()),
            match (self.backend, self.scheme) {
                (Backend::Cpu, _) => "group sizes - (cpu)".to_string(),
                (Backend::Gpu, Scheme::Slab) => "slab (its own presets)".to_string(),
                (Backend::Gpu, Scheme::DyCuckoo) => "dycuckoo (its own presets)".to_string(),
                (Backend::Gpu, Scheme::Sharded) => "sharded (its own run)".to_string(),
                (Backend::Gpu, Scheme::TwoLevel) => format!(
                    "two_level bucket shapes {} (hash functions x slots per subtable)",
                    list(
                        self.two_level_shapes
                            .iter()
                            .map(|x| x.to_string())
                            .collect()
                    )
                ),
                (Backend::Gpu, Scheme::WarpDrive) => format!(
                    "warpdrive group sizes {}",
                    list(self.group_sizes.iter().map(|x| x.to_string()).collect())
                ),
                (Backend::Gpu, Scheme::Stadium) => format!(
                    "stadium ticket bits {}, buckets {}{}",
                    list(self.ticket_bits.iter().map(|x| x.to_string()).collect()),
                    list(
                        self.locations
                            .iter()
                            .map(|l| location_name(*l).to_string())
                            .collect()
                    ),
                    self.host_keys_log2
                        .map(|h| format!(" (host rows: n = 2^{h} unique keys)"))
                        .unwrap_or_default()
                ),
            },
            list(self.distributions.iter().map(|x| x.to_string()).collect()),
            list(self.types.iter().map(|x| x.to_string()).collect()),
            list(self.ops.iter().map(|x| x.to_string()).collect()),
            self.runs
        );
        if self.mixed() {
            out += &format!(
                "mixed vs phase-separated batches: slices of {} operations (inserts + finds){}\n",
                list(self.slice_log2.iter().map(|s| format!("2^{s}")).collect()),
                if self
                    .variants()
                    .iter()
                    .any(|v| matches!(v, Variant::WarpDrive { .. }))
                    && self.scheme == Scheme::Stadium
                {
                    format!(", warpdrive (group size {DEFAULT_GROUP_SIZE}) alongside")
                } else {
                    String::new()
                }
            );
        }
        if let Some(z) = self.zipf_info() {
            out += &format!(
                "zipf: s = {}, universe 2^{} ranks, load = {}\n",
                z.s,
                z.universe_log2,
                z.load.name()
            );
        }
        let e = self.estimate(rayon::current_num_threads());
        out += &format!(
            "size: {} sets, {} rows, {} timed runs, {} tables; about {:.0} s (rough estimate){}{}",
            e.sets,
            e.rows,
            e.timed_runs,
            e.tables,
            e.seconds,
            if e.host_bytes > 0 {
                format!("; host key sets {}", human_bytes(e.host_bytes))
            } else {
                String::new()
            },
            if e.device_bytes > 0 {
                format!("; device peak about {}", human_bytes(e.device_bytes))
            } else {
                String::new()
            }
        );
        for n in &self.notes {
            out += &format!("\nnote: {n}");
        }
        out
    }

    /// The report's method text: the backend's method and what this plan changes.
    pub fn method(&self) -> String {
        let mut m = method_for(self.backend).to_string();
        if let Some(k) = self.keys_log2 {
            m += &format!(
                ". Fixed keys (keys_log2 {k}): n = 2^{k} keys in every set, capacity = \
                 ceil(n / lf){}, a new table per (type, distribution, group size, load factor), \
                 freed before the next; the {} key sets of a (type, distribution) (one per run, \
                 seeds independent of the table) are generated once and shared by all its \
                 tables ({}), so each table sees {} fresh key sets and all tables see the same \
                 ones",
                if self.distributions.contains(&Distribution::Zipf)
                    && self.zipf_load == ZipfLoad::Distinct
                {
                    " (zipf: ceil(distinct / lf), the paper's occupancy load)"
                } else {
                    ""
                },
                self.runs,
                if self.backend == Backend::Gpu {
                    "cached on the host when they fit, else regenerated per run; kept on the \
                     device when they fit beside the largest table, else uploaded per run"
                } else {
                    "cached on the host when they fit, else regenerated per run"
                },
                self.runs
            );
        }
        if let Some(z) = self.zipf_info() {
            m += &format!(
                ". Zipf sets: n keys drawn with replacement by keygen::zipf (rejection-inversion) \
                 with s = {} over 2^{} ranks mapped through keygen's key bijection (the same \
                 universe for every key type), values value_for(key) so duplicates carry equal \
                 values, absent keys from the indices after the universe; verified: no failures \
                 and len == distinct (host parallel sort + dedup), find_hit of the inserted \
                 multiset all found with value_for(key), find_miss none found, contains all \
                 present, erase leaves len 0; load factor = {}",
                z.s,
                z.universe_log2,
                match z.load {
                    ZipfLoad::Distinct => "distinct / capacity (occupancy)",
                    ZipfLoad::Inserted => "inserted keys / capacity",
                }
            );
        }
        if self.backend == Backend::Gpu && self.scheme == Scheme::Stadium {
            m +=
                ". Stadium: a table per (bucket location, ticket size) instead of per group size, \
                  the same loop; host-bucket (out-of-core) tables: before their runs, the bound of \
                  the table's size is measured (a pinned mapped host buffer of the table's bucket \
                  bytes, random writes then random reads of key + value byte records, one warm-up \
                  then the median of the runs, CUDA events; roofline.host_bounds) and each host \
                  row's bound_ratio = G ops/s over the random-write bound (insert, erase) or the \
                  random-read bound (finds, contains); device-bucket rows: bound_ratio = \
                  roofline_ratio";
        }
        if self.mixed() {
            m += &format!(
                ". Mixed experiment (the Stadium paper's Fig. 15): per run, n fresh unique keys \
                 inserted in slices of s/2 keys (s = {} operations per slice), where slice i \
                 also finds the keys inserted by slice i - 1; phase-separated sequence: per \
                 slice an insert batch then a find batch; mixed sequence: per slice one mixed \
                 batch (HashTable::mixed_batch's kernel) with inserts and finds alternating in \
                 groups of 32, as in the paper; both on the cleared table, in one stream, timed \
                 as a whole by CUDA events around the sequence (launch gaps included), the \
                 order of the two sequences alternating between runs; verified every run: \
                 every find found with value_for(key), every insert new (no failure, no \
                 update), len == n after each sequence, and after the mixed sequence a find of \
                 all n keys; row: median time of the mixed sequence (median_ms, gops = \
                 operations / time), separated_ms the separated median, and \
                 concurrency_efficiency = separated_ms / median_ms; its roofline and host \
                 bound are the harmonic means of the insert and find ones",
                self.slice_log2
                    .iter()
                    .map(|s| format!("2^{s}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        if self.ops.contains(&Op::FindHalf) {
            m += ". find_half: n queries, the inserted key at even positions and an absent key at \
                  odd ones, every answer checked (found with value_for(key), or not found)";
        }
        if self.ops.contains(&Op::Reduce) {
            m += ". reduce: the insert's batch reduced by key (insert_or_apply, Reduce::Sum) into \
                  the cleared table, timed like the insert (so with distinct keys the two rates \
                  compare at the same load); verified: len == distinct, and a find of every row's \
                  key finds the sum of its rows' values (folded on the host where keys repeat)";
        }
        if self.ops.contains(&Op::FindUnordered) {
            m += ". find_unordered: the inserted keys looked up with answers in the table's order \
                  (find_device_unordered_async, its output buffers allocated in the timed call), \
                  each answer checked through its batch index and every index seen once";
        }
        if self.ops != Op::DEFAULT {
            m += &format!(
                ". Operations measured: {} (insert runs in every run, as the others need a \
                 filled table; an unselected insert's verification failures are attached to \
                 the selected rows)",
                self.ops
                    .iter()
                    .map(|o| o.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        if let Some(p) = self.preset {
            m += &format!(
                ". Preset {p}: {} timed runs per set after the warm-up",
                self.runs
            );
        }
        m
    }
}

/// `n` for a load factor of a table of `capacity` slots.
pub(crate) fn keys_for(load_factor: f64, capacity: usize) -> usize {
    ((load_factor * capacity as f64).round() as usize).clamp(1, capacity)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schemes::stadium::parse_locations;

    fn cfg() -> BenchConfig {
        BenchConfig::default()
    }

    #[test]
    fn zipf_universe_checks_the_key_width() {
        // u128 keys: keygen's sequence has 2^64 keys, so a 2^62 universe plus misses fits.
        let p = resolve(
            &BenchConfig {
                distributions: Some(vec![Distribution::Zipf]),
                zipf_universe_log2: Some(62),
                types: Some(vec![KvType::U128U64]),
                ..cfg()
            },
            Backend::Gpu,
        );
        assert!(p.is_ok(), "{p:?}");
        // u32 keys (with u64 values): 2^32 keys, no room for misses beyond a 2^32 universe.
        let e = resolve(
            &BenchConfig {
                distributions: Some(vec![Distribution::Zipf]),
                zipf_universe_log2: Some(32),
                types: Some(vec![KvType::U32U64]),
                ..cfg()
            },
            Backend::Gpu,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("4-byte keys of type u32u64"), "{e}");
    }

    #[test]
    fn default_plan_is_the_old_one() {
        let p = resolve(&cfg(), Backend::Gpu).unwrap();
        assert_eq!(p.slots, 1 << 26);
        assert_eq!(p.keys_log2, None);
        assert_eq!(p.runs, 5);
        assert_eq!(p.load_factors, DEFAULT_LOAD_FACTORS.to_vec());
        assert_eq!(p.group_sizes, vec![DEFAULT_GROUP_SIZE]);
        assert_eq!(p.distributions, vec![Distribution::Unique]);
        assert_eq!(p.types, KvType::ALL.to_vec());
        assert_eq!(p.ops, Op::DEFAULT.to_vec());
        assert!(p.notes.is_empty());
        assert_eq!(p.scheme, Scheme::WarpDrive);
        assert!(p.ticket_bits.is_empty() && p.locations.is_empty());
        assert_eq!(
            p.variants(),
            vec![Variant::WarpDrive {
                group: DEFAULT_GROUP_SIZE
            }]
        );
        assert_eq!(p.sets(), 8);
        let c = resolve(&cfg(), Backend::Cpu).unwrap();
        assert_eq!(c.slots, 1 << 22);
        assert!(c.group_sizes.is_empty());
        assert_eq!(c.group_slots(), vec![None]);
        let q = resolve(
            &BenchConfig {
                quick: true,
                ..cfg()
            },
            Backend::Gpu,
        )
        .unwrap();
        assert_eq!((q.slots, q.runs), (1 << 18, 3));
    }

    #[test]
    fn rejects_bad_values() {
        let bad = |c: BenchConfig| resolve(&c, Backend::Gpu).is_err();
        assert!(bad(BenchConfig {
            group_sizes: Some(vec![3]),
            ..cfg()
        }));
        assert!(bad(BenchConfig {
            load_factors: Some(vec![1.2]),
            ..cfg()
        }));
        assert!(bad(BenchConfig {
            keys_log2: Some(32),
            ..cfg()
        }));
        assert!(bad(BenchConfig {
            ops: Some(vec![]),
            ..cfg()
        }));
        assert!(bad(BenchConfig {
            runs: Some(0),
            ..cfg()
        }));
        assert!(bad(BenchConfig {
            distributions: Some(vec![Distribution::Zipf]),
            zipf_s: f64::NAN,
            ..cfg()
        }));
        // u32 keys: a 2^32 universe leaves no absent keys for find_miss.
        assert!(bad(BenchConfig {
            distributions: Some(vec![Distribution::Zipf]),
            zipf_universe_log2: Some(32),
            ..cfg()
        }));
        assert!(!bad(BenchConfig {
            distributions: Some(vec![Distribution::Zipf]),
            zipf_universe_log2: Some(32),
            ops: Some(vec![Op::Insert, Op::FindHit]),
            types: Some(vec![KvType::U32]),
            ..cfg()
        }));
    }

    #[test]
    fn stadium_flags_resolve() {
        let p = resolve(
            &BenchConfig {
                scheme: Some(Scheme::Stadium),
                ..cfg()
            },
            Backend::Gpu,
        )
        .unwrap();
        assert_eq!(
            (p.ticket_bits.clone(), p.locations.clone()),
            (vec![8], vec![Location::Device])
        );
        assert!(p.group_sizes.is_empty());
        assert_eq!(
            p.variants(),
            vec![Variant::Stadium {
                location: Location::Device,
                ticket_bits: 8
            }]
        );
        assert_eq!(p.sets(), 2 * 4);
        assert!(p
            .summary()
            .contains("stadium ticket bits 8, buckets device"));
        assert!(p.method().contains("bound_ratio = roofline_ratio"));
        let p = resolve(
            &BenchConfig {
                scheme: Some(Scheme::Stadium),
                ticket_bits: Some(vec![8, 1, 8]),
                locations: Some(vec![Location::Host, Location::Device]),
                group_sizes: Some(vec![8]),
                ..cfg()
            },
            Backend::Gpu,
        )
        .unwrap();
        assert_eq!(p.ticket_bits, vec![1, 8]);
        assert_eq!(p.variants().len(), 4);
        assert_eq!(
            p.variants()[0],
            Variant::Stadium {
                location: Location::Host,
                ticket_bits: 1
            }
        );
        assert!(p.notes.iter().any(|n| n.contains("WarpDrive only")));
        // Bad ticket sizes and locations are errors on either backend.
        for backend in [Backend::Gpu, Backend::Cpu] {
            for bad in [vec![3], vec![], vec![16]] {
                assert!(resolve(
                    &BenchConfig {
                        scheme: Some(Scheme::Stadium),
                        ticket_bits: Some(bad.clone()),
                        ..cfg()
                    },
                    backend,
                )
                .is_err());
            }
        }
        assert!(parse_locations("device,host").is_ok());
        assert_eq!(
            parse_locations("both").unwrap(),
            vec![Location::Device, Location::Host]
        );
        assert!(parse_locations("disk").is_err());
        assert!(parse_locations("").is_err());
        assert_eq!("STADIUM".parse::<Scheme>().unwrap(), Scheme::Stadium);
        assert_eq!("slab".parse::<Scheme>().unwrap(), Scheme::Slab);
        assert!("cuckoo".parse::<Scheme>().is_err());
        // The slab hash runs its own presets, not this loop.
        let e = resolve(
            &BenchConfig {
                scheme: Some(Scheme::Slab),
                ..cfg()
            },
            Backend::Gpu,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("slab-fig4"), "{e}");
        assert_eq!("find-half".parse::<Op>().unwrap(), Op::FindHalf);
    }

    #[test]
    fn stadium_on_the_cpu_says_so() {
        let p = resolve(
            &BenchConfig {
                scheme: Some(Scheme::Stadium),
                locations: Some(vec![Location::Host]),
                ticket_bits: Some(vec![1, 8]),
                ..cfg()
            },
            Backend::Cpu,
        )
        .unwrap();
        assert_eq!(p.variants(), vec![Variant::Cpu]);
        assert!(p.ticket_bits.is_empty() && p.locations.is_empty());
        assert!(
            p.notes.iter().any(|n| n.contains("GPU only")),
            "{:?}",
            p.notes
        );
        assert!(
            p.notes
                .iter()
                .any(|n| n.contains("--location host") && n.contains("needs a GPU")),
            "{:?}",
            p.notes
        );
        // Stadium flags with WarpDrive: ignored, with a note.
        let p = resolve(
            &BenchConfig {
                ticket_bits: Some(vec![4]),
                ..cfg()
            },
            Backend::Gpu,
        )
        .unwrap();
        assert!(p.ticket_bits.is_empty());
        assert!(p.notes.iter().any(|n| n.contains("--scheme stadium only")));
    }

    #[test]
    fn capacities_and_seeds() {
        let p = resolve(
            &BenchConfig {
                keys_log2: Some(10),
                ..cfg()
            },
            Backend::Gpu,
        )
        .unwrap();
        assert_eq!(p.capacity_for(1024, 1024, 0.5, Distribution::Unique), 2048);
        assert_eq!(p.capacity_for(1024, 300, 0.5, Distribution::Zipf), 600);
        assert_eq!(p.capacity_for(1024, 1024, 0.99, Distribution::Unique), 1035);
        // Fixed keys: seeds do not depend on the load factor, but on the run and type.
        assert_eq!(
            p.seed_for(4, Distribution::Unique, 0, 1),
            p.seed_for(4, Distribution::Unique, 3, 1)
        );
        assert_ne!(
            p.seed_for(4, Distribution::Unique, 0, 1),
            p.seed_for(4, Distribution::Unique, 0, 2)
        );
        assert_ne!(
            p.seed_for(4, Distribution::Unique, 0, 1),
            p.seed_for(4, Distribution::Zipf, 0, 1)
        );
        // Fixed slots: the old seeds for unique keys.
        let q = resolve(&cfg(), Backend::Gpu).unwrap();
        assert_eq!(
            q.seed_for(0x0404, Distribution::Unique, 2, 1),
            run_seed(q.seed, 0x0404, 2, 1)
        );
    }

    #[test]
    fn mixed_experiment_refuses_what_it_cannot_measure() {
        let mixed = |f: &dyn Fn(&mut BenchConfig)| {
            let mut c = BenchConfig {
                ops: Some(vec![Op::Mixed]),
                keys_log2: Some(20),
                ..Default::default()
            };
            f(&mut c);
            resolve(&c, Backend::Gpu)
        };
        assert!(mixed(&|_| {}).is_ok());
        let err = |f: &dyn Fn(&mut BenchConfig)| mixed(f).unwrap_err().to_string();
        assert!(err(&|c| c.ops = Some(vec![Op::Mixed, Op::Insert])).contains("alone"));
        assert!(err(&|c| c.keys_log2 = None).contains("--keys-log2"));
        assert!(err(&|c| c.distributions = Some(vec![Distribution::Zipf])).contains("unique"));
        assert!(err(&|c| c.slice_log2 = Some(vec![])).contains("no slice"));
        assert!(err(&|c| c.slice_log2 = Some(vec![0])).contains("--slice-log2"));
        assert!(err(&|c| c.slice_log2 = Some(vec![4])).contains("at most 2^16"));
        assert!(mixed(&|c| c.slice_log2 = Some(vec![5])).is_ok());
        // --slice-log2 without mixed: ignored, with a note.
        let p = resolve(
            &BenchConfig {
                slice_log2: Some(vec![10]),
                ..Default::default()
            },
            Backend::Gpu,
        )
        .unwrap();
        assert!(p.slice_log2.is_empty());
        assert!(p.notes.iter().any(|n| n.contains("--slice-log2")));
        assert_eq!("mixed".parse::<Op>().unwrap(), Op::Mixed);
        assert!(!Op::ALL.contains(&Op::Mixed));
    }
}
