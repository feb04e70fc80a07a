//! What a benchmark measures: a [`BenchConfig`] (the flags of `warpmap bench`) resolved into a
//! [`Plan`] (presets expanded, defaults filled in, limits applied), the plan's size and a rough
//! time estimate, and the method text of the report.
//!
//! Two sizing modes:
//! - fixed slots (the default): one table of `2^slots_log2` slots per (type, distribution, group
//!   size), cleared between runs and load factors; `n = lf * capacity` keys per load factor;
//! - fixed keys (`keys_log2`, the presets): `n = 2^keys_log2` keys for every load factor and a
//!   new table of `ceil(n / lf)` slots per (type, distribution, group size, load factor), freed
//!   before the next one is made (Zipf: `ceil(distinct / lf)`, see [`ZipfLoad`]).

use super::{run_seed, BenchConfig, Op, DEFAULT_LOAD_FACTORS};
use std::fmt;
use std::str::FromStr;
use warpmap::table::stadium::{Location, TICKET_BITS};
use warpmap::table::warpdrive::{SlotLayout, DEFAULT_GROUP_SIZE, GROUP_SIZES};
use warpmap::table::Backend;
use warpmap::{Error, Result};

/// The largest `keys_log2` on a GPU (`u32` keys need `2n` distinct keys: inserted and absent).
pub const GPU_MAX_KEYS_LOG2: u32 = 31;
/// The largest `keys_log2` on the CPU backend (larger values are capped, with a note).
pub const CPU_MAX_KEYS_LOG2: u32 = 22;
/// `keys_log2` of a preset under `--quick`.
pub const QUICK_KEYS_LOG2: u32 = 18;
/// The Zipf universe: `2^31` ranks for every key type (see [`Distribution::Zipf`]).
pub const DEFAULT_ZIPF_UNIVERSE_LOG2: u32 = 31;

/// `host_keys_log2` of the `stadium` preset: out-of-core (host-bucket) rows use 2^25 unique keys
/// (tables of 256-512 MiB of pinned memory), as random accesses over the bus run at 0.04-0.45
/// G/s; at 2^27 the host rows alone would take about 10 minutes.
pub const STADIUM_HOST_KEYS_LOG2: u32 = 25;

/// `keys_log2` of the fig15 and fig19 presets (in-core): 2^24 keys. Fig. 19 of the paper uses
/// 2^25 pairs; 2^24 keeps the 264-byte records of its widest pairing at 4 GiB per key set, so
/// that the five run sets stay cached on the host and on the device and the preset stays under
/// three minutes on an H100.
pub const FIG_KEYS_LOG2: u32 = 24;

/// `host_keys_log2` of the fig15 and fig19 presets: out-of-core (host-bucket) rows use 2^22
/// keys (tables of 20 MiB to 1.3 GiB of pinned memory), as random accesses over the bus run at
/// 0.04-0.45 G/s and a record of up to 264 bytes is written per insert.
pub const FIG_HOST_KEYS_LOG2: u32 = 22;

/// The Stadium paper's Fig. 19 load factor (the fig19 preset's).
pub const FIG19_LOAD_FACTOR: f64 = 0.85;

/// The mixed experiment's slice sizes (operations per slice, log2) by default: 2^17 (131 072,
/// the paper's "approximately 100k") and 2^21 (2 M: a mixed batch that fills an H100).
pub const DEFAULT_SLICE_LOG2: [u32; 2] = [17, 21];

/// The GPU hash table a benchmark measures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Scheme {
    /// [`WarpDrive`](warpmap::WarpDrive), a table per group size.
    #[default]
    WarpDrive,
    /// [`Stadium`](warpmap::Stadium), a table per (bucket location, ticket size).
    Stadium,
}

impl Scheme {
    /// "warpdrive" or "stadium" (also the rows' `scheme`).
    pub fn name(self) -> &'static str {
        match self {
            Scheme::WarpDrive => "warpdrive",
            Scheme::Stadium => "stadium",
        }
    }
}

impl FromStr for Scheme {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "warpdrive" => Ok(Scheme::WarpDrive),
            "stadium" => Ok(Scheme::Stadium),
            other => Err(format!("unknown scheme '{other}' (warpdrive or stadium)")),
        }
    }
}

impl fmt::Display for Scheme {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// "device" or "host" (the rows' `location`; "auto" for an unresolved [`Location::Auto`]).
pub fn location_name(l: Location) -> &'static str {
    match l {
        Location::Device => "device",
        Location::Host => "host",
        Location::Auto => "auto",
    }
}

/// `device`, `host`, `both`, or a comma-separated list of the first two.
pub fn parse_locations(s: &str) -> std::result::Result<Vec<Location>, String> {
    let mut v = Vec::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.to_ascii_lowercase().as_str() {
            "device" | "in-core" => v.push(Location::Device),
            "host" | "out-of-core" => v.push(Location::Host),
            "both" | "all" => v.extend([Location::Device, Location::Host]),
            other => return Err(format!("unknown location '{other}' (device, host or both)")),
        }
    }
    if v.is_empty() {
        return Err("no location given (device, host or both)".into());
    }
    dedup_in_place(&mut v);
    Ok(v)
}

/// One table configuration of a set loop: what varies besides type, distribution and load
/// factor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Variant {
    /// The CPU backend's `CpuTable`.
    Cpu,
    /// WarpDrive with this group size.
    WarpDrive {
        /// Coalesced group size.
        group: u32,
    },
    /// Stadium with these buckets and tickets.
    Stadium {
        /// Where the buckets live.
        location: Location,
        /// Bits per ticket.
        ticket_bits: u32,
    },
}

/// How the inserted keys are drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Distribution {
    /// `n` distinct random keys ([`keygen::unique`](warpmap::keygen::unique)).
    Unique,
    /// `n` keys drawn with replacement by [`keygen::zipf`](warpmap::keygen::zipf) with exponent
    /// `s` (default `1 + 1e-6`, the WarpDrive paper's Fig. 8) over `2^31` ranks (default),
    /// mapped to keys through keygen's key bijection (so frequent keys are spread over the key
    /// space). Many duplicates: at `n = 2^27` and the defaults, 38.3 M (29%) of the draws are
    /// distinct.
    Zipf,
}

impl Distribution {
    /// Both, in the order they run.
    pub const ALL: [Distribution; 2] = [Distribution::Unique, Distribution::Zipf];

    /// "unique" or "zipf".
    pub fn name(self) -> &'static str {
        match self {
            Distribution::Unique => "unique",
            Distribution::Zipf => "zipf",
        }
    }

    /// `unique`, `zipf`, `both`, or a comma-separated list of the first two.
    pub fn parse_list(s: &str) -> std::result::Result<Vec<Distribution>, String> {
        let mut v = Vec::new();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            if part.eq_ignore_ascii_case("both") || part.eq_ignore_ascii_case("all") {
                v.extend(Distribution::ALL);
            } else {
                v.push(part.parse()?);
            }
        }
        if v.is_empty() {
            return Err("no distribution given (unique, zipf or both)".into());
        }
        dedup_in_place(&mut v);
        Ok(v)
    }
}

impl FromStr for Distribution {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "unique" => Ok(Distribution::Unique),
            "zipf" => Ok(Distribution::Zipf),
            other => Err(format!(
                "unknown distribution '{other}' (unique, zipf or both)"
            )),
        }
    }
}

impl fmt::Display for Distribution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A key/value type pair of the benchmark.
///
/// [`KvType::ALL`] (`u32`→`u32` and `u64`→`u64`) is the default and what the presets measure;
/// the other types run only when asked for ([`BenchConfig::types`], `--types`) or by the fig19
/// preset ([`KvType::FIG19`]: the key and value size sweep). Every type runs every
/// distribution: Zipf keys are indices of keygen's key sequence, which is injective for every
/// key width (`u128` and byte-array keys: the index's 64-bit mix in the low 8 bytes, mixes of
/// it above), and values are `value_for(key)` of the value type. Names: `bN` is `[u8; N]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub enum KvType {
    /// `u32` keys and `u32` values.
    #[serde(rename = "u32")]
    U32,
    /// `u64` keys and `u64` values.
    #[serde(rename = "u64")]
    U64,
    /// `u32` keys and `u64` values (WarpDrive: the 16-byte pair layout). Only with `--types`.
    #[serde(rename = "u32u64")]
    U32U64,
    /// `u128` keys and `u64` values (WarpDrive: the tagged struct-of-arrays layout, 28 bytes a
    /// slot). Only with `--types`.
    #[serde(rename = "u128u64")]
    U128U64,
    /// `[u8; 32]` keys and `u64` values (fig19's key sweep).
    #[serde(rename = "b32u64")]
    B32U64,
    /// `[u8; 64]` keys and `u64` values (fig19's key sweep).
    #[serde(rename = "b64u64")]
    B64U64,
    /// `u64` keys and `u32` values (fig19's value sweep).
    #[serde(rename = "u64u32")]
    U64U32,
    /// `u64` keys and `u128` values (fig19's value sweep).
    #[serde(rename = "u64u128")]
    U64U128,
    /// `u64` keys and `[u8; 32]` values (fig19's value sweep).
    #[serde(rename = "u64b32")]
    U64B32,
    /// `u64` keys and `[u8; 64]` values (fig19's value sweep).
    #[serde(rename = "u64b64")]
    U64B64,
    /// `u64` keys and `[u8; 128]` values (fig19's value sweep).
    #[serde(rename = "u64b128")]
    U64B128,
    /// `u64` keys and `[u8; 256]` values (fig19's value sweep).
    #[serde(rename = "u64b256")]
    U64B256,
}

impl KvType {
    /// The default types, in the order they run: `u32`→`u32` and `u64`→`u64` (the presets'
    /// comparison tables use these; the other types run only when asked for).
    pub const ALL: [KvType; 2] = [KvType::U32, KvType::U64];

    /// Every type the benchmark can measure.
    pub const EVERY: [KvType; 12] = [
        KvType::U32,
        KvType::U64,
        KvType::U32U64,
        KvType::U128U64,
        KvType::B32U64,
        KvType::B64U64,
        KvType::U64U32,
        KvType::U64U128,
        KvType::U64B32,
        KvType::U64B64,
        KvType::U64B128,
        KvType::U64B256,
    ];

    /// The fig19 preset's types (the Stadium paper's Fig. 19): keys of 4, 8, 16, 32 and 64
    /// bytes with 8-byte values, then 8-byte keys with values of 4, 16, 32, 64, 128 and 256
    /// bytes (`u64`→`u64`, in the key sweep, is shared by both sweeps).
    pub const FIG19: [KvType; 11] = [
        KvType::U32U64,
        KvType::U64,
        KvType::U128U64,
        KvType::B32U64,
        KvType::B64U64,
        KvType::U64U32,
        KvType::U64U128,
        KvType::U64B32,
        KvType::U64B64,
        KvType::U64B128,
        KvType::U64B256,
    ];

    /// "u32", "u64", "u32u64", "u128u64", "b32u64", ... (parsed back by `from_str`; also the
    /// JSON name).
    pub fn name(self) -> &'static str {
        match self {
            KvType::U32 => "u32",
            KvType::U64 => "u64",
            KvType::U32U64 => "u32u64",
            KvType::U128U64 => "u128u64",
            KvType::B32U64 => "b32u64",
            KvType::B64U64 => "b64u64",
            KvType::U64U32 => "u64u32",
            KvType::U64U128 => "u64u128",
            KvType::U64B32 => "u64b32",
            KvType::U64B64 => "u64b64",
            KvType::U64B128 => "u64b128",
            KvType::U64B256 => "u64b256",
        }
    }

    /// Bytes of the key (the `key_bytes` of its rows).
    pub fn key_bytes(self) -> usize {
        match self {
            KvType::U32 | KvType::U32U64 => 4,
            KvType::U128U64 => 16,
            KvType::B32U64 => 32,
            KvType::B64U64 => 64,
            KvType::U64
            | KvType::U64U32
            | KvType::U64U128
            | KvType::U64B32
            | KvType::U64B64
            | KvType::U64B128
            | KvType::U64B256 => 8,
        }
    }

    /// Bytes of the value (the `value_bytes` of its rows).
    pub fn value_bytes(self) -> usize {
        match self {
            KvType::U32 | KvType::U64U32 => 4,
            KvType::U64 | KvType::U32U64 | KvType::U128U64 | KvType::B32U64 | KvType::B64U64 => 8,
            KvType::U64U128 => 16,
            KvType::U64B32 => 32,
            KvType::U64B64 => 64,
            KvType::U64B128 => 128,
            KvType::U64B256 => 256,
        }
    }

    /// The seed tag of the type's key sets (distinct per type; the first four keep their
    /// historical tags so their key sets do not change).
    pub(crate) fn seed_tag(self) -> u64 {
        match self {
            KvType::U32 => 0x0404,
            KvType::U64 => 0x0808,
            KvType::U32U64 => 0x0408,
            KvType::U128U64 => 0x1008,
            t => ((t.key_bytes() as u64) << 16) | t.value_bytes() as u64 | 0x5_0000_0000,
        }
    }
}

/// Calls `$f::<K, V>($args..., tag)` with the key and value types of a [`KvType`] (the one
/// place that maps the enum to Rust types).
macro_rules! with_kv_types {
    ($ty:expr, $f:ident ( $($arg:expr),* )) => {{
        use $crate::plan::KvType as T;
        let ty: T = $ty;
        let tag = ty.seed_tag();
        match ty {
            T::U32 => $f::<u32, u32>($($arg,)* tag),
            T::U64 => $f::<u64, u64>($($arg,)* tag),
            T::U32U64 => $f::<u32, u64>($($arg,)* tag),
            T::U128U64 => $f::<u128, u64>($($arg,)* tag),
            T::B32U64 => $f::<[u8; 32], u64>($($arg,)* tag),
            T::B64U64 => $f::<[u8; 64], u64>($($arg,)* tag),
            T::U64U32 => $f::<u64, u32>($($arg,)* tag),
            T::U64U128 => $f::<u64, u128>($($arg,)* tag),
            T::U64B32 => $f::<u64, [u8; 32]>($($arg,)* tag),
            T::U64B64 => $f::<u64, [u8; 64]>($($arg,)* tag),
            T::U64B128 => $f::<u64, [u8; 128]>($($arg,)* tag),
            T::U64B256 => $f::<u64, [u8; 256]>($($arg,)* tag),
        }
    }};
}
pub(crate) use with_kv_types;

impl FromStr for KvType {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let t = s.trim().to_ascii_lowercase();
        match t.as_str() {
            "u32" | "u32/u32" | "u32->u32" => Ok(KvType::U32),
            "u64" | "u64/u64" | "u64->u64" => Ok(KvType::U64),
            "u32u64" | "u32/u64" | "u32->u64" => Ok(KvType::U32U64),
            "u128" | "u128u64" | "u128/u64" | "u128->u64" => Ok(KvType::U128U64),
            other => KvType::EVERY
                .into_iter()
                .find(|k| k.name() == other)
                .ok_or_else(|| {
                    format!(
                        "unknown type '{other}' (u32 for u32->u32, u64 for u64->u64, u32u64 for \
                         u32->u64, u128 for u128->u64; fig19's b32u64, b64u64, u64u32, \
                         u64u128, u64b32, u64b64, u64b128, u64b256, where bN is [u8; N])"
                    )
                }),
        }
    }
}

impl fmt::Display for KvType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Op {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let t = s.trim().to_ascii_lowercase().replace('-', "_");
        Op::ALL
            .into_iter()
            .chain([Op::Mixed])
            .find(|op| op.name() == t)
            .ok_or_else(|| {
                format!(
                    "unknown operation '{s}' (insert, find_hit, find_half, find_miss, contains, \
                     erase; or mixed, the mixed-batch experiment, alone)"
                )
            })
    }
}

/// A named benchmark setup (`warpmap bench --preset NAME`). Flags given beside a preset
/// override its values (except `--group-sizes` with `compare`, which adds to the default).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Preset {
    /// The WarpDrive paper's Fig. 7: rate against group size (1 to 32) and load factor
    /// (0.4 to 0.99), unique keys, `u32`/`u32`, 2^27 pairs, insert and find_hit.
    Fig7,
    /// Fig. 7's setup with Zipf keys (`s = 1 + 1e-6`): the paper's Fig. 8.
    Fig8,
    /// The comparison table: load factors 0.5, 0.8, 0.9, 0.95, `u32`/`u32` and `u64`/`u64`,
    /// 2^27 keys, insert, find_hit and find_miss, the default group size.
    Compare,
    /// Stadium hashing (paper Figs. 14, 16, 17): `u32`/`u32`, 2^27 keys (host buckets: 2^25,
    /// [`STADIUM_HOST_KEYS_LOG2`]), load factors 0.5, 0.8, 0.9, 0.95, ticket sizes 1, 2, 4, 8,
    /// buckets in device and in host memory, insert, find_hit, find_half and find_miss.
    Stadium,
    /// Stadium hashing's Fig. 15: mixed versus phase-separated batches ([`Op::Mixed`]),
    /// `u32`/`u32`, 2^24 keys ([`FIG_KEYS_LOG2`]; host buckets 2^22), load factors 0.5, 0.8,
    /// 0.9, 0.95, ticket sizes 1, 2, 4, 8, buckets on the device and in host memory, slices of
    /// 2^17 and 2^21 operations, and WarpDrive (default group size) on the same slices.
    Fig15,
    /// Stadium hashing's Fig. 19: key and value sizes ([`KvType::FIG19`]), insert, find_hit
    /// and erase, load factor 0.85, 2^24 keys (host buckets 2^22), ticket sizes 1 and 8,
    /// buckets on the device and in host memory.
    Fig19,
}

impl Preset {
    /// Every preset.
    pub const ALL: [Preset; 6] = [
        Preset::Fig7,
        Preset::Fig8,
        Preset::Compare,
        Preset::Stadium,
        Preset::Fig15,
        Preset::Fig19,
    ];

    /// "fig7", "fig8", "compare", "stadium", "fig15" or "fig19".
    pub fn name(self) -> &'static str {
        match self {
            Preset::Fig7 => "fig7",
            Preset::Fig8 => "fig8",
            Preset::Compare => "compare",
            Preset::Stadium => "stadium",
            Preset::Fig15 => "fig15",
            Preset::Fig19 => "fig19",
        }
    }

    /// One line on what it measures.
    pub fn description(self) -> &'static str {
        match self {
            Preset::Fig7 => {
                "WarpDrive paper Fig. 7: group sizes 1-32 x load factors 0.4-0.99, unique keys, \
                 u32/u32, 2^27 pairs, insert + find_hit"
            }
            Preset::Fig8 => {
                "WarpDrive paper Fig. 8: group sizes 1-32 x load factors 0.4-0.99, Zipf keys \
                 (s = 1 + 1e-6), u32/u32, 2^27 pairs, insert + find_hit"
            }
            Preset::Compare => {
                "comparison table: load factors 0.5/0.8/0.9/0.95, u32/u32 and u64/u64, 2^27 \
                 keys, insert + find_hit + find_miss, default group size"
            }
            Preset::Stadium => {
                "Stadium hashing (paper Figs. 14, 16, 17): u32/u32, 2^27 keys (host buckets \
                 2^25), load factors 0.5/0.8/0.9/0.95, tickets 1/2/4/8 bits, buckets on the \
                 device and in host memory, insert + find_hit + find_half + find_miss"
            }
            Preset::Fig15 => {
                "Stadium hashing Fig. 15: mixed vs phase-separated insert/find batches \
                 (concurrency efficiency), u32/u32, 2^24 keys (host buckets 2^22), load \
                 factors 0.5/0.8/0.9/0.95, tickets 1/2/4/8 bits, device and host buckets, \
                 slices of 2^17 and 2^21 ops, WarpDrive alongside"
            }
            Preset::Fig19 => {
                "Stadium hashing Fig. 19: key sizes 4-64 B (8 B values) and value sizes 4-256 B \
                 (8 B keys), load factor 0.85, 2^24 keys (host buckets 2^22), tickets 1/8 \
                 bits, device and host buckets, insert + find_hit + erase"
            }
        }
    }

    fn defaults(self) -> PresetDefaults {
        let fig_lfs = vec![0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99];
        match self {
            Preset::Fig7 | Preset::Fig8 => PresetDefaults {
                keys_log2: 27,
                group_sizes: GROUP_SIZES.to_vec(),
                add_given_group_sizes: false,
                load_factors: fig_lfs,
                distributions: vec![if self == Preset::Fig7 {
                    Distribution::Unique
                } else {
                    Distribution::Zipf
                }],
                types: vec![KvType::U32],
                ops: vec![Op::Insert, Op::FindHit],
                runs: 5,
                ..PresetDefaults::warpdrive()
            },
            Preset::Compare => PresetDefaults {
                keys_log2: 27,
                group_sizes: vec![DEFAULT_GROUP_SIZE],
                add_given_group_sizes: true,
                load_factors: DEFAULT_LOAD_FACTORS.to_vec(),
                distributions: vec![Distribution::Unique],
                types: KvType::ALL.to_vec(),
                ops: vec![Op::Insert, Op::FindHit, Op::FindMiss],
                runs: 5,
                ..PresetDefaults::warpdrive()
            },
            Preset::Stadium => PresetDefaults {
                keys_log2: 27,
                group_sizes: vec![DEFAULT_GROUP_SIZE],
                add_given_group_sizes: false,
                load_factors: DEFAULT_LOAD_FACTORS.to_vec(),
                distributions: vec![Distribution::Unique],
                types: vec![KvType::U32],
                ops: vec![Op::Insert, Op::FindHit, Op::FindHalf, Op::FindMiss],
                runs: 5,
                scheme: Some(Scheme::Stadium),
                ticket_bits: Some(TICKET_BITS.to_vec()),
                locations: Some(vec![Location::Device, Location::Host]),
                host_keys_log2: Some(STADIUM_HOST_KEYS_LOG2),
                slice_log2: None,
            },
            Preset::Fig15 => PresetDefaults {
                keys_log2: FIG_KEYS_LOG2,
                load_factors: DEFAULT_LOAD_FACTORS.to_vec(),
                types: vec![KvType::U32],
                ops: vec![Op::Mixed],
                scheme: Some(Scheme::Stadium),
                ticket_bits: Some(TICKET_BITS.to_vec()),
                locations: Some(vec![Location::Device, Location::Host]),
                host_keys_log2: Some(FIG_HOST_KEYS_LOG2),
                slice_log2: Some(DEFAULT_SLICE_LOG2.to_vec()),
                ..PresetDefaults::warpdrive()
            },
            Preset::Fig19 => PresetDefaults {
                keys_log2: FIG_KEYS_LOG2,
                load_factors: vec![FIG19_LOAD_FACTOR],
                types: KvType::FIG19.to_vec(),
                ops: vec![Op::Insert, Op::FindHit, Op::Erase],
                scheme: Some(Scheme::Stadium),
                ticket_bits: Some(vec![1, 8]),
                locations: Some(vec![Location::Device, Location::Host]),
                host_keys_log2: Some(FIG_HOST_KEYS_LOG2),
                ..PresetDefaults::warpdrive()
            },
        }
    }
}

impl FromStr for Preset {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        let t = s.trim().to_ascii_lowercase();
        Preset::ALL
            .into_iter()
            .find(|p| p.name() == t)
            .ok_or_else(|| {
                format!("unknown preset '{s}' (fig7, fig8, compare, stadium, fig15 or fig19)")
            })
    }
}

impl fmt::Display for Preset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What the load factor of a Zipf set means in fixed-keys mode.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ZipfLoad {
    /// Occupancy: capacity = `ceil(distinct / lf)`, so the table is `lf` full after the insert
    /// (the paper: "in this case the specified loads refers to the actual occupancy of table
    /// slots after inserting all elements").
    #[default]
    Distinct,
    /// Target load: capacity = `ceil(n / lf)` as for unique keys (occupancy about `lf / 3`).
    Inserted,
}

impl ZipfLoad {
    /// "distinct" or "inserted".
    pub fn name(self) -> &'static str {
        match self {
            ZipfLoad::Distinct => "distinct",
            ZipfLoad::Inserted => "inserted",
        }
    }
}

impl FromStr for ZipfLoad {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "distinct" | "occupancy" => Ok(ZipfLoad::Distinct),
            "inserted" | "target" => Ok(ZipfLoad::Inserted),
            other => Err(format!(
                "unknown zipf load '{other}' (distinct or inserted)"
            )),
        }
    }
}

struct PresetDefaults {
    keys_log2: u32,
    group_sizes: Vec<u32>,
    /// `--group-sizes` adds to the preset's group sizes instead of replacing them.
    add_given_group_sizes: bool,
    load_factors: Vec<f64>,
    distributions: Vec<Distribution>,
    types: Vec<KvType>,
    ops: Vec<Op>,
    runs: usize,
    scheme: Option<Scheme>,
    ticket_bits: Option<Vec<u32>>,
    locations: Option<Vec<Location>>,
    host_keys_log2: Option<u32>,
    slice_log2: Option<Vec<u32>>,
}

impl PresetDefaults {
    /// The fields a WarpDrive preset leaves at their defaults (`..` filler).
    fn warpdrive() -> Self {
        PresetDefaults {
            keys_log2: 27,
            group_sizes: vec![DEFAULT_GROUP_SIZE],
            add_given_group_sizes: false,
            load_factors: DEFAULT_LOAD_FACTORS.to_vec(),
            distributions: vec![Distribution::Unique],
            types: KvType::ALL.to_vec(),
            ops: Op::DEFAULT.to_vec(),
            runs: 5,
            scheme: None,
            ticket_bits: None,
            locations: None,
            host_keys_log2: None,
            slice_log2: None,
        }
    }
}

fn dedup_in_place<T: PartialEq + Copy>(v: &mut Vec<T>) {
    let mut seen: Vec<T> = Vec::with_capacity(v.len());
    v.retain(|x| {
        if seen.contains(x) {
            false
        } else {
            seen.push(*x);
            true
        }
    });
}

/// The Zipf parameters of a report (present when Zipf keys were measured).
#[derive(Clone, Debug, serde::Serialize)]
pub struct ZipfInfo {
    /// The exponent `s`.
    pub s: f64,
    /// The universe: ranks `1..=2^universe_log2` (keys: indices `0..2^universe_log2` of the
    /// run's key bijection; absent keys for find_miss: the indices after it).
    pub universe_log2: u32,
    /// What a Zipf set's load factor means (fixed-keys mode; fixed slots: always `inserted`).
    pub load: ZipfLoad,
}

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
    match (scheme, gpu) {
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

/// Device bytes of a variant's table of `cap` slots or buckets (estimate).
fn variant_device_bytes(v: Variant, kb: usize, vb: usize, cap: f64) -> f64 {
    match v {
        Variant::Cpu => 0.0,
        Variant::WarpDrive { .. } => {
            SlotLayout::for_widths(kb, vb).table_bytes(cap as usize) as f64
        }
        Variant::Stadium {
            location,
            ticket_bits,
        } => {
            let board =
                (cap / warpmap::table::stadium::entries_per_word(ticket_bits) as f64).ceil() * 4.0;
            board
                + match location {
                    // Auto: at most device buckets.
                    Location::Device | Location::Auto => cap * (kb + vb) as f64,
                    Location::Host => 0.0,
                }
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

/// Operations per second of a variant's kernel (the model of [`Plan::estimate`]).
fn op_rate(v: Variant, kb: usize, vb: usize, lf: f64, host_table: f64, op: Op) -> f64 {
    let half = |hit: f64, miss: f64| 2.0 / (1.0 / hit + 1.0 / miss);
    match v {
        Variant::Cpu => 1e9,
        Variant::WarpDrive { .. } => {
            let (ins, find, erase) = match SlotLayout::for_widths(kb, vb) {
                SlotLayout::Packed8 => (6e9, 12e9, 8e9),
                SlotLayout::Pair16 => (4e9, 8e9, 7e9),
                SlotLayout::Tagged { .. } => (2e9, 4e9, 3.5e9),
            };
            let miss = (65e9 * (1.0 - lf)).clamp(0.4e9, 20e9);
            match op {
                Op::Insert => ins,
                Op::FindHit | Op::Contains => find,
                Op::FindMiss => miss,
                Op::FindHalf => half(find, miss),
                Op::Erase => erase,
                Op::Mixed => half(ins, find),
            }
        }
        // Auto: the plan's locations are resolved ones; estimate it as in-core.
        Variant::Stadium {
            location: Location::Device | Location::Auto,
            ticket_bits,
        } => {
            let miss = if ticket_bits >= 4 {
                10e9
            } else {
                (10e9 * (1.0 - lf)).max(1e9)
            };
            match op {
                Op::Insert | Op::Erase => 4e9,
                Op::FindHit | Op::Contains => 5e9,
                Op::FindMiss => miss,
                Op::FindHalf => half(5e9, miss),
                Op::Mixed => half(4e9, 5e9),
            }
        }
        Variant::Stadium {
            location: Location::Host,
            ticket_bits,
        } => {
            let b = host_random_rate(host_table);
            let a = lf.clamp(0.01, 0.99);
            let fp = 0.5f64.powi(ticket_bits as i32 - 1);
            // Expected host reads per query (double hashing at load a).
            let miss_reads = fp * a / (1.0 - a);
            let hit_reads = 1.0 + fp * ((1.0 / a) * (1.0 / (1.0 - a)).ln() - 1.0).max(0.0);
            let insert_reads = fp * ((-(1.0 - a).ln() - a) / a).max(0.0);
            let board = 1.0 / 10e9;
            let t = |host_accesses: f64| 1.0 / (board + host_accesses / b);
            match op {
                Op::Insert => t(1.0 + insert_reads),
                Op::FindHit | Op::Contains => t(hit_reads),
                Op::FindMiss => t(miss_reads),
                Op::FindHalf => half(t(hit_reads), t(miss_reads)),
                Op::Erase => t(hit_reads),
                Op::Mixed => half(t(1.0 + insert_reads), t(hit_reads)),
            }
        }
    }
}

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

fn human_bytes(b: u64) -> String {
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
        let mut v = self.scheme_variants();
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

    fn scheme_variants(&self) -> Vec<Variant> {
        match self.scheme {
            Scheme::WarpDrive => self
                .group_sizes
                .iter()
                .map(|&group| Variant::WarpDrive { group })
                .collect(),
            Scheme::Stadium => self
                .locations
                .iter()
                .flat_map(|&location| {
                    self.ticket_bits
                        .iter()
                        .map(move |&ticket_bits| Variant::Stadium {
                            location,
                            ticket_bits,
                        })
                })
                .collect(),
        }
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
                    .map(|&v| variant_device_bytes(v, kb, vb, cap))
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
                            .unwrap_or_else(|| super::keys_for(lf, self.slots));
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
                        let host_table = match v {
                            Variant::Stadium {
                                location: Location::Host,
                                ..
                            } => cap * (kb + vb) as f64,
                            _ => 0.0,
                        };
                        let rate = |op: Op| op_rate(v, kb, vb, lf, host_table, op);
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
                                    Op::FindMiss | Op::Contains => 1.0,
                                    Op::Insert | Op::Erase | Op::Mixed => 0.0,
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
                            s += 0.01
                                + variant_device_bytes(v, kb, vb, cap) / 1e12
                                + host_table / 2e9;
                        }
                        if host_table > 0.0 && !bound_measured && (self.keys().is_some() || li == 0)
                        {
                            bound_measured = true;
                            let ops = super::roofline::host_bound_ops(
                                self.quick,
                                (host_table / (kb + vb) as f64) as u64,
                            ) as f64;
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
        let mut m = super::method_for(self.backend).to_string();
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

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> BenchConfig {
        BenchConfig::default()
    }

    #[test]
    fn parses_names() {
        assert_eq!(
            Distribution::parse_list("both").unwrap(),
            vec![Distribution::Unique, Distribution::Zipf]
        );
        assert_eq!(
            Distribution::parse_list("zipf").unwrap(),
            vec![Distribution::Zipf]
        );
        assert_eq!(
            Distribution::parse_list("zipf,unique,zipf").unwrap(),
            vec![Distribution::Zipf, Distribution::Unique]
        );
        assert!(Distribution::parse_list("normal").is_err());
        assert!(Distribution::parse_list("").is_err());
        assert_eq!("find-hit".parse::<Op>().unwrap(), Op::FindHit);
        assert_eq!("ERASE".parse::<Op>().unwrap(), Op::Erase);
        assert!("delete".parse::<Op>().is_err());
        assert_eq!("u64".parse::<KvType>().unwrap(), KvType::U64);
        assert_eq!("u32/u32".parse::<KvType>().unwrap(), KvType::U32);
        assert!("u16".parse::<KvType>().is_err());
        for (names, t) in [
            (["u32u64", "u32/u64", "U32->U64"], KvType::U32U64),
            (["u128", "u128/u64", " u128->u64 "], KvType::U128U64),
        ] {
            for n in names {
                assert_eq!(n.parse::<KvType>().unwrap(), t, "{n}");
            }
        }
        assert!("u128/u128".parse::<KvType>().is_err());
        assert!("u64/u32".parse::<KvType>().is_err());
        assert_eq!("u64u32".parse::<KvType>().unwrap(), KvType::U64U32);
        assert_eq!(" U64B256 ".parse::<KvType>().unwrap(), KvType::U64B256);
        assert!("u64b512".parse::<KvType>().is_err());
        for t in KvType::EVERY {
            assert_eq!(t.name().parse::<KvType>().unwrap(), t);
            assert_eq!(t.to_string(), t.name());
        }
        assert_eq!("Fig7".parse::<Preset>().unwrap(), Preset::Fig7);
        assert!("fig9".parse::<Preset>().is_err());
        assert_eq!("occupancy".parse::<ZipfLoad>().unwrap(), ZipfLoad::Distinct);
        for p in Preset::ALL {
            assert_eq!(p.name().parse::<Preset>().unwrap(), p);
        }
    }

    #[test]
    fn key_and_value_bytes() {
        use warpmap::key::{Key, Value};
        let widths: Vec<(usize, usize)> = KvType::EVERY
            .iter()
            .map(|t| (t.key_bytes(), t.value_bytes()))
            .collect();
        assert_eq!(
            widths,
            vec![
                (4, 4),
                (8, 8),
                (4, 8),
                (16, 8),
                (32, 8),
                (64, 8),
                (8, 4),
                (8, 16),
                (8, 32),
                (8, 64),
                (8, 128),
                (8, 256)
            ]
        );
        // Seed tags are distinct, and the first four keep their historical values.
        let mut tags: Vec<u64> = KvType::EVERY.iter().map(|t| t.seed_tag()).collect();
        assert_eq!(tags[..4], [0x0404, 0x0808, 0x0408, 0x1008]);
        tags.sort_unstable();
        tags.dedup();
        assert_eq!(tags.len(), KvType::EVERY.len());
        assert_eq!(KvType::U128U64.key_bytes(), <u128 as Key>::BYTES);
        assert_eq!(KvType::U32U64.value_bytes(), <u64 as Value>::BYTES);
        // The defaults stay the two published types.
        assert_eq!(KvType::ALL, [KvType::U32, KvType::U64]);
    }

    #[test]
    fn new_types_only_when_asked() {
        for preset in [
            None,
            Some(Preset::Fig7),
            Some(Preset::Fig8),
            Some(Preset::Compare),
        ] {
            let p = resolve(&BenchConfig { preset, ..cfg() }, Backend::Gpu).unwrap();
            assert!(
                p.types.iter().all(|t| KvType::ALL.contains(t)),
                "{preset:?}: {:?}",
                p.types
            );
        }
        let asked = vec![KvType::U128U64, KvType::U32U64, KvType::U128U64];
        let p = resolve(
            &BenchConfig {
                preset: Some(Preset::Compare),
                types: Some(asked),
                distributions: Some(vec![Distribution::Unique, Distribution::Zipf]),
                ..cfg()
            },
            Backend::Gpu,
        )
        .unwrap();
        assert_eq!(p.types, vec![KvType::U128U64, KvType::U32U64]);
        assert!(p.summary().contains("types u128u64,u32u64"));
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
    fn fig7_preset_expands() {
        let c = BenchConfig {
            preset: Some(Preset::Fig7),
            ..cfg()
        };
        let p = resolve(&c, Backend::Gpu).unwrap();
        assert_eq!(p.keys_log2, Some(27));
        assert_eq!(p.keys(), Some(1 << 27));
        assert_eq!(p.group_sizes, GROUP_SIZES.to_vec());
        assert_eq!(
            p.load_factors,
            vec![0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99]
        );
        assert_eq!(p.distributions, vec![Distribution::Unique]);
        assert_eq!(p.types, vec![KvType::U32]);
        assert_eq!(p.ops, vec![Op::Insert, Op::FindHit]);
        assert_eq!(p.runs, 5);
        assert_eq!(p.sets(), 48);
        assert_eq!(p.slots, ((1u64 << 27) as f64 / 0.4).ceil() as usize);
        assert!(p.method().contains("Preset fig7"));
        // It must fit one device command (< 8 minutes) with room to spare on a 16-thread host.
        let e = p.estimate(16);
        assert!(e.seconds < 300.0, "fig7 estimate {} s", e.seconds);
        assert_eq!((e.rows, e.timed_runs, e.tables), (96, 240, 48));

        let f8 = resolve(
            &BenchConfig {
                preset: Some(Preset::Fig8),
                ..cfg()
            },
            Backend::Gpu,
        )
        .unwrap();
        assert_eq!(f8.distributions, vec![Distribution::Zipf]);
        assert_eq!(f8.sets(), 48);
        assert!(f8.estimate(16).seconds < 300.0);
        assert!(f8.method().contains("len == distinct"));
        assert_eq!(f8.zipf_info().unwrap().load, ZipfLoad::Distinct);
    }

    #[test]
    fn flags_override_presets() {
        let c = BenchConfig {
            preset: Some(Preset::Fig7),
            group_sizes: Some(vec![8, 2, 2]),
            distributions: Some(vec![Distribution::Unique, Distribution::Zipf]),
            runs: Some(3),
            keys_log2: Some(20),
            load_factors: Some(vec![0.5, 0.99]),
            ..cfg()
        };
        let p = resolve(&c, Backend::Gpu).unwrap();
        assert_eq!(p.group_sizes, vec![2, 8]);
        assert_eq!(p.distributions.len(), 2);
        assert_eq!(p.runs, 3);
        assert_eq!(p.keys_log2, Some(20));
        assert_eq!(p.load_factors, vec![0.5, 0.99]);
        assert_eq!(p.ops, vec![Op::Insert, Op::FindHit]);
        assert_eq!(p.sets(), 2 * 2 * 2);
    }

    #[test]
    fn compare_preset_adds_group_sizes() {
        let c = BenchConfig {
            preset: Some(Preset::Compare),
            ..cfg()
        };
        let p = resolve(&c, Backend::Gpu).unwrap();
        assert_eq!(p.keys_log2, Some(27));
        assert_eq!(p.group_sizes, vec![DEFAULT_GROUP_SIZE]);
        assert_eq!(p.load_factors, DEFAULT_LOAD_FACTORS.to_vec());
        assert_eq!(p.types, KvType::ALL.to_vec());
        assert_eq!(p.ops, vec![Op::Insert, Op::FindHit, Op::FindMiss]);
        assert_eq!(p.runs, 5);
        assert!(p.estimate(16).seconds < 300.0);
        let c = BenchConfig {
            group_sizes: Some(vec![8, 16]),
            ..c
        };
        let p = resolve(&c, Backend::Gpu).unwrap();
        let mut want = vec![DEFAULT_GROUP_SIZE, 8, 16];
        want.sort_unstable();
        want.dedup();
        assert_eq!(p.group_sizes, want);
    }

    #[test]
    fn quick_presets_are_small_and_cpu_is_capped() {
        let c = BenchConfig {
            preset: Some(Preset::Fig8),
            quick: true,
            ..cfg()
        };
        let p = resolve(&c, Backend::Gpu).unwrap();
        assert_eq!((p.keys_log2, p.runs), (Some(QUICK_KEYS_LOG2), 3));
        let c = BenchConfig {
            preset: Some(Preset::Fig7),
            ..cfg()
        };
        let p = resolve(&c, Backend::Cpu).unwrap();
        assert_eq!(p.keys_log2, Some(CPU_MAX_KEYS_LOG2));
        assert!(p.group_sizes.is_empty());
        assert_eq!(p.sets(), 8);
        assert!(p.notes.iter().any(|n| n.contains("capped at 22")));
        assert!(p.notes.iter().any(|n| n.contains("GPU only")));
        let c = BenchConfig {
            keys_log2: Some(18),
            ..cfg()
        };
        let p = resolve(&c, Backend::Cpu).unwrap();
        assert_eq!(p.keys_log2, Some(18));
        assert!(p.notes.is_empty());
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
        assert!("slab".parse::<Scheme>().is_err());
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
    fn stadium_preset_expands() {
        let p = resolve(
            &BenchConfig {
                preset: Some(Preset::Stadium),
                ..cfg()
            },
            Backend::Gpu,
        )
        .unwrap();
        assert_eq!(p.scheme, Scheme::Stadium);
        assert_eq!(p.keys_log2, Some(27));
        assert_eq!(p.host_keys_log2, Some(STADIUM_HOST_KEYS_LOG2));
        assert_eq!(p.ticket_bits, TICKET_BITS.to_vec());
        assert_eq!(p.locations, vec![Location::Device, Location::Host]);
        assert_eq!(p.types, vec![KvType::U32]);
        assert_eq!(p.load_factors, DEFAULT_LOAD_FACTORS.to_vec());
        assert_eq!(
            p.ops,
            vec![Op::Insert, Op::FindHit, Op::FindHalf, Op::FindMiss]
        );
        assert_eq!(p.sets(), 2 * 4 * 4);
        let host = Variant::Stadium {
            location: Location::Host,
            ticket_bits: 8,
        };
        let device = Variant::Stadium {
            location: Location::Device,
            ticket_bits: 8,
        };
        assert_eq!(
            p.keys_for_variant(device, Distribution::Unique),
            Some(1 << 27)
        );
        assert_eq!(
            p.keys_for_variant(host, Distribution::Unique),
            Some(1 << 25)
        );
        assert_eq!(p.keys_for_variant(host, Distribution::Zipf), Some(1 << 27));
        assert!(p.notes.iter().any(|n| n.contains("2^25")));
        assert!(p.needs_misses() && p.needs_half());
        // keys + values + absent keys + half-present queries.
        assert_eq!(p.set_bytes(10, 4, 4), 10 * 16);
        let e = p.estimate(16);
        assert_eq!((e.rows, e.tables), (32 * 4, 32));
        // Under one device command (run.sh's 570 s budget).
        assert!(
            e.seconds > 30.0 && e.seconds < 450.0,
            "stadium estimate {} s",
            e.seconds
        );
        let q = resolve(
            &BenchConfig {
                preset: Some(Preset::Stadium),
                quick: true,
                ..cfg()
            },
            Backend::Gpu,
        )
        .unwrap();
        assert_eq!(q.keys_log2, Some(QUICK_KEYS_LOG2));
        assert_eq!(q.host_keys_log2, None, "2^18 is below the host cap");
        assert!(q.estimate(16).seconds < 60.0);
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
    fn fig19_preset() {
        let cfg = BenchConfig {
            preset: Some(Preset::Fig19),
            ..Default::default()
        };
        let p = resolve(&cfg, Backend::Gpu).unwrap();
        assert_eq!(p.types, KvType::FIG19.to_vec());
        assert_eq!(p.load_factors, vec![FIG19_LOAD_FACTOR]);
        assert_eq!(p.ops, vec![Op::Insert, Op::FindHit, Op::Erase]);
        assert_eq!(p.ticket_bits, vec![1, 8]);
        assert_eq!(p.locations, vec![Location::Device, Location::Host]);
        assert_eq!(p.keys_log2, Some(FIG_KEYS_LOG2));
        assert_eq!(p.host_keys_log2, Some(FIG_HOST_KEYS_LOG2));
        assert_eq!(p.scheme, Scheme::Stadium);
        assert!(!p.mixed() && p.slice_log2.is_empty());
        assert_eq!(p.sets(), 11 * 4);
        assert_eq!(p.variants().len(), 4);
        let e = p.estimate(16);
        eprintln!("fig19: {:.0} s with 16 threads; {}", e.seconds, p.summary());
        assert!(e.seconds > 20.0 && e.seconds < 180.0, "{e:?}");
        assert!(e.device_bytes < 60 << 30, "{e:?}");
        // Both sweeps: keys 4..64 with 8-byte values, values 4..256 with 8-byte keys.
        let keys: Vec<usize> = p
            .types
            .iter()
            .filter(|t| t.value_bytes() == 8)
            .map(|t| t.key_bytes())
            .collect();
        assert_eq!(keys, vec![4, 8, 16, 32, 64]);
        let mut vals: Vec<usize> = p
            .types
            .iter()
            .filter(|t| t.key_bytes() == 8)
            .map(|t| t.value_bytes())
            .collect();
        vals.sort_unstable();
        assert_eq!(vals, vec![4, 8, 16, 32, 64, 128, 256]);
        // Quick: small and fast.
        let q = resolve(&BenchConfig { quick: true, ..cfg }, Backend::Gpu).unwrap();
        assert_eq!(q.keys_log2, Some(QUICK_KEYS_LOG2));
        assert!(q.estimate(16).seconds < 60.0);
    }

    #[test]
    fn fig15_preset_and_the_mixed_experiment() {
        let cfg = BenchConfig {
            preset: Some(Preset::Fig15),
            ..Default::default()
        };
        let p = resolve(&cfg, Backend::Gpu).unwrap();
        assert!(p.mixed());
        assert_eq!(p.ops, vec![Op::Mixed]);
        assert_eq!(p.slice_log2, DEFAULT_SLICE_LOG2.to_vec());
        assert_eq!(p.types, vec![KvType::U32]);
        // Eight Stadium tables and WarpDrive alongside.
        let v = p.variants();
        assert_eq!(v.len(), 9);
        assert_eq!(
            v.last(),
            Some(&Variant::WarpDrive {
                group: DEFAULT_GROUP_SIZE
            })
        );
        assert_eq!(p.sets(), 9 * 4 * 2);
        let e = p.estimate(16);
        eprintln!("fig15: {:.0} s with 16 threads; {}", e.seconds, p.summary());
        assert!(e.seconds > 10.0 && e.seconds < 180.0, "{e:?}");
        assert!(p.method().contains("concurrency_efficiency"));
        assert!(p.summary().contains("slices of 2^17,2^21 operations"));
        // Host buckets only: no WarpDrive.
        let host = resolve(
            &BenchConfig {
                locations: Some(vec![Location::Host]),
                ..cfg.clone()
            },
            Backend::Gpu,
        )
        .unwrap();
        assert_eq!(host.variants().len(), 4);
        // Quick: one small slice size.
        let q = resolve(
            &BenchConfig {
                quick: true,
                ..cfg.clone()
            },
            Backend::Gpu,
        )
        .unwrap();
        assert_eq!(q.slice_log2, vec![12]);
        // The CPU backend: CpuTable only.
        let c = resolve(&cfg, Backend::Cpu).unwrap();
        assert_eq!(c.variants(), vec![Variant::Cpu]);
        assert!(c.mixed());
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
