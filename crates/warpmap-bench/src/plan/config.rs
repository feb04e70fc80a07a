//! What a benchmark can be asked for: [`BenchConfig`] (the flags of `warpmap bench`), the
//! operations ([`Op`]), key distributions ([`Distribution`]) and key/value types ([`KvType`]),
//! and the limits and defaults [`resolve`](super::resolve) applies.

use super::Preset;
use crate::schemes::two_level::TwoLevelShape;
use crate::schemes::Scheme;
use std::fmt;
use std::str::FromStr;
use warpmap::table::stadium::Location;

/// The load factors measured by default.
pub const DEFAULT_LOAD_FACTORS: [f64; 4] = [0.5, 0.8, 0.9, 0.95];

/// The largest `keys_log2` on a GPU (`u32` keys need `2n` distinct keys: inserted and absent).
pub const GPU_MAX_KEYS_LOG2: u32 = 31;

/// The largest `keys_log2` on the CPU backend (larger values are capped, with a note).
pub const CPU_MAX_KEYS_LOG2: u32 = 22;

/// `keys_log2` of a preset under `--quick`.
pub const QUICK_KEYS_LOG2: u32 = 18;

/// The Zipf universe: `2^31` ranks for every key type (see [`Distribution::Zipf`]).
pub const DEFAULT_ZIPF_UNIVERSE_LOG2: u32 = 31;

/// The mixed experiment's slice sizes (operations per slice, log2) by default: 2^17 (131 072,
/// the paper's "approximately 100k") and 2^21 (2 M: a mixed batch that fills an H100).
pub const DEFAULT_SLICE_LOG2: [u32; 2] = [17, 21];

/// What to run.
#[derive(Clone, Debug)]
pub struct BenchConfig {
    /// Tiny sizes and few runs: a smoke test of a few seconds on either backend.
    pub quick: bool,
    /// Use the CPU backend even if a GPU is present.
    pub force_cpu: bool,
    /// The source revision, recorded in the report (the CLI embeds it at build time).
    pub commit: String,
    /// Table slots as a power of two; `None`: 2^26 on a GPU, 2^22 on the CPU (2^18 quick on either).
    /// Ignored with `keys_log2`.
    pub slots_log2: Option<u32>,
    /// Timed runs per (table, load factor); `None`: 5 (3 quick). At least 1.
    pub runs: Option<usize>,
    /// Load factors; `None`: [`DEFAULT_LOAD_FACTORS`]. Each in `(0, 1]`.
    pub load_factors: Option<Vec<f64>>,
    /// The base seed of every key set (each run derives its own).
    pub seed: u64,
    /// Fixed keys: `n = 2^keys_log2` keys per load factor and a new table of `ceil(n / lf)`
    /// slots per load factor (instead of fixed slots). At most [`GPU_MAX_KEYS_LOG2`]; capped at
    /// [`CPU_MAX_KEYS_LOG2`] on the CPU backend.
    pub keys_log2: Option<u32>,
    /// WarpDrive group sizes, a table per group size; `None`: the default group size only.
    pub group_sizes: Option<Vec<u32>>,
    /// Key distributions; `None`: unique only.
    pub distributions: Option<Vec<Distribution>>,
    /// Key/value types; `None`: the preset's (fig7, fig8: `u32`→`u32`; compare:
    /// [`KvType::ALL`]), else [`KvType::ALL`] (`u32`→`u32` and `u64`→`u64`).
    /// [`KvType::U32U64`] (`u32`→`u64`) and [`KvType::U128U64`] (`u128`→`u64`, WarpDrive's
    /// tagged layout) run only when listed here; both work with either [`Distribution`] (Zipf
    /// keys come from keygen's injective key sequence for every width, values are
    /// `value_for(key)` of the value type) and each row's `key_bytes`, `value_bytes`,
    /// `key_type` and `value_type` are those of the table's key and value types.
    pub types: Option<Vec<KvType>>,
    /// Operations with a row; `None`: [`Op::DEFAULT`] (all but `find_half`).
    pub ops: Option<Vec<Op>>,
    /// A preset: it fills the fields above that are `None`.
    pub preset: Option<Preset>,
    /// Zipf exponent `s` (default `1 + 1e-6`).
    pub zipf_s: f64,
    /// Zipf universe as log2 of the rank count; `None`: [`DEFAULT_ZIPF_UNIVERSE_LOG2`].
    pub zipf_universe_log2: Option<u32>,
    /// What a Zipf set's load factor means with `keys_log2` (default: occupancy).
    pub zipf_load: ZipfLoad,
    /// WarpDrive's overflow filter (default: auto; off measures the paper's exact scheme).
    pub overflow_filter: warpmap::table::warpdrive::OverflowFilter,
    /// The GPU table measured; `None`: the preset's, else [`Scheme::WarpDrive`] (the CPU
    /// backend measures `CpuTable` either way).
    pub scheme: Option<Scheme>,
    /// Stadium ticket sizes in bits, a table per size; `None`: the preset's, else 8.
    pub ticket_bits: Option<Vec<u32>>,
    /// Stadium bucket locations, a table per location; `None`: the preset's, else device.
    pub locations: Option<Vec<Location>>,
    /// Fixed keys, Stadium host-bucket tables: `n = 2^min(keys_log2, host_keys_log2)` for unique
    /// keys (random accesses over the bus run at 0.04-0.45 G/s); `None`: the preset's
    /// ([`STADIUM_HOST_KEYS_LOG2`](super::STADIUM_HOST_KEYS_LOG2) for `stadium`), else no cap.
    pub host_keys_log2: Option<u32>,
    /// The mixed experiment ([`Op::Mixed`]): operations per slice (inserts + finds), log2, a
    /// set per size; `None`: the preset's, else [`DEFAULT_SLICE_LOG2`] (quick: 2^12).
    pub slice_log2: Option<Vec<u32>>,
    /// two_level bucket shapes (hash functions × slots per subtable), a table per shape;
    /// `None`: the preset's, else the library's default (3x512).
    pub two_level_shapes: Option<Vec<TwoLevelShape>>,
}

impl Default for BenchConfig {
    fn default() -> Self {
        BenchConfig {
            quick: false,
            force_cpu: false,
            commit: "unknown".into(),
            slots_log2: None,
            runs: None,
            load_factors: None,
            seed: 0x5eed_2024_0bad_cafe,
            keys_log2: None,
            group_sizes: None,
            distributions: None,
            types: None,
            ops: None,
            preset: None,
            zipf_s: warpmap::keygen::DEFAULT_ZIPF_S,
            zipf_universe_log2: None,
            zipf_load: ZipfLoad::Distinct,
            overflow_filter: Default::default(),
            scheme: None,
            ticket_bits: None,
            locations: None,
            host_keys_log2: None,
            slice_log2: None,
            two_level_shapes: None,
        }
    }
}

/// A benchmarked operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    /// Insert `n` new keys into the empty table.
    Insert,
    /// Find the `n` inserted keys (values checked).
    FindHit,
    /// Find `n` keys of which half are inserted (even positions: the inserted key at that
    /// position) and half absent (odd positions): the paper's "half of the queries present".
    /// Every answer checked (found with `value_for(key)`, or not found). Only when asked for.
    FindHalf,
    /// Find `n` keys that are not in the table.
    FindMiss,
    /// Membership test of the `n` inserted keys.
    Contains,
    /// Erase the `n` inserted keys.
    Erase,
    /// Reduce by key: the `n` pairs `insert_or_apply`'d with [`Reduce::Sum`](warpmap::Reduce)
    /// into the empty table (the same batch as [`Op::Insert`], so with distinct keys the same
    /// table results, and the two rates compare); checked by `len` and by a find of every key
    /// against the per-key sums. Numeric values on the tables that reduce (WarpDrive, the CPU
    /// backend); elsewhere the row reports the refusal. Only when asked for.
    Reduce,
    /// Find the `n` inserted keys with answers in an order of the table's choosing, each with
    /// its key's batch index
    /// ([`find_device_unordered_async`](warpmap::DeviceHashTable::find_device_unordered_async):
    /// a hash join's probe side); every answer checked through its index, every index once.
    /// Device tables only. Only when asked for.
    FindUnordered,
    /// The mixed-batch experiment (the Stadium paper's Fig. 15,
    /// [`stadium_fig15`](crate::experiments::stadium_fig15)): `n` keys inserted in slices,
    /// each slice also finding the previous slice's keys, run once as one mixed insert/find
    /// batch per slice and once as an insert batch then a find batch per slice.
    /// Its own experiment (`--ops mixed` alone, or `--preset fig15`), not part of [`Op::ALL`].
    Mixed,
}

impl Op {
    /// Every operation of the per-operation loop, in the order they run ([`Op::Mixed`] is an
    /// experiment of its own).
    pub const ALL: [Op; 8] = [
        Op::Insert,
        Op::FindHit,
        Op::FindHalf,
        Op::FindMiss,
        Op::Contains,
        Op::Erase,
        Op::Reduce,
        Op::FindUnordered,
    ];

    /// The operations measured when none are named (all but [`Op::FindHalf`], [`Op::Reduce`]
    /// and [`Op::FindUnordered`]).
    pub const DEFAULT: [Op; 5] = [
        Op::Insert,
        Op::FindHit,
        Op::FindMiss,
        Op::Contains,
        Op::Erase,
    ];

    /// The name used in the JSON ("insert", "find_hit", ...).
    pub fn name(self) -> &'static str {
        match self {
            Op::Insert => "insert",
            Op::FindHit => "find_hit",
            Op::FindHalf => "find_half",
            Op::FindMiss => "find_miss",
            Op::Contains => "contains",
            Op::Erase => "erase",
            Op::Reduce => "reduce",
            Op::FindUnordered => "find_unordered",
            Op::Mixed => "mixed",
        }
    }

    /// The position in [`Op::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// Whether the operation writes the table (its roofline is the random CAS; finds and
    /// `contains` compare with the random gather; [`Op::Mixed`], half inserts and half finds,
    /// with their harmonic mean).
    pub fn writes(self) -> bool {
        matches!(self, Op::Insert | Op::Erase | Op::Reduce)
    }
}

impl std::fmt::Display for Op {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
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
                     erase, reduce, find_unordered; or mixed, the mixed-batch experiment, alone)"
                )
            })
    }
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

pub(crate) fn dedup_in_place<T: PartialEq + Copy>(v: &mut Vec<T>) {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::Preset;

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
}
