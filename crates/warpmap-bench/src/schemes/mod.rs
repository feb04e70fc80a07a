//! What the benchmark knows of each scheme, in one place per scheme: what a table variant is
//! ([`Variant`]: a WarpDrive group size, a Stadium (bucket location, ticket size), the CPU
//! table), how to build it and what its rows report beside the measurements (`Built`), and
//! the scheme's share of the plan's estimate (device bytes, the rate model).
//!
//! - [`warpdrive`]: a table per group size; the slot layout sizes it.
//! - [`stadium`]: a table per (bucket location, ticket size); host buckets are out-of-core.
//! - [`slab`]: the slab hash, measured by its own presets (`plan::slab`,
//!   `experiments::slab_*`): buckets sized for a memory utilisation, its stats and allocator.
//! - [`two_level`]: the two-level cuckoo table, a table per bucket shape.
//! - [`cpu`]: the CPU backend's table, measured whatever the GPU scheme asked.

pub mod cpu;
pub mod slab;
pub mod stadium;
pub mod two_level;
pub mod warpdrive;

use crate::plan::{Op, Plan};
use stadium::StadiumInfo;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use two_level::TwoLevelShape;
use warpmap::table::stadium::Location;
use warpmap::{DeviceHashTable, Error, Gpu, Key, Result, Value};

/// The GPU hash table a benchmark measures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Scheme {
    /// [`WarpDrive`](warpmap::WarpDrive), a table per group size.
    #[default]
    WarpDrive,
    /// [`Stadium`](warpmap::Stadium), a table per (bucket location, ticket size).
    Stadium,
    /// The slab hash ([`Slab`](warpmap::Slab)): its own presets
    /// ([`SlabPreset`](crate::plan::SlabPreset), [`run_slab`](crate::experiments::run_slab)),
    /// not the per-load-factor loop.
    Slab,
    /// DyCuckoo ([`DyCuckoo`](warpmap::DyCuckoo)): its own presets
    /// ([`DyCuckooPreset`](crate::plan::DyCuckooPreset),
    /// [`run_dycuckoo`](crate::experiments::run_dycuckoo)).
    DyCuckoo,
    /// The two-level cuckoo table ([`TwoLevel`](warpmap::TwoLevel)), a table per bucket shape.
    TwoLevel,
    /// The sharded table ([`ShardedMap`](warpmap::sharded::ShardedMap)) over WarpDrive shards:
    /// its own run ([`run_sharded`](crate::experiments::run_sharded)).
    Sharded,
}

impl Scheme {
    /// "warpdrive", "stadium" or "slab" (also the rows' `scheme`).
    pub fn name(self) -> &'static str {
        match self {
            Scheme::WarpDrive => "warpdrive",
            Scheme::Stadium => "stadium",
            Scheme::Slab => "slab",
            Scheme::DyCuckoo => "dycuckoo",
            Scheme::TwoLevel => "two_level",
            Scheme::Sharded => "sharded",
        }
    }

    /// The tables a set loop runs over for this scheme: a WarpDrive per group size of the
    /// plan, a Stadium per (location, ticket size); none for the slab hash, whose presets
    /// run experiments of their own ([`resolve`](crate::plan::resolve) refuses it).
    pub(crate) fn variants(self, plan: &Plan) -> Vec<Variant> {
        match self {
            Scheme::WarpDrive => warpdrive::variants(&plan.group_sizes),
            Scheme::Stadium => stadium::variants(&plan.locations, &plan.ticket_bits),
            Scheme::TwoLevel => two_level::variants(&plan.two_level_shapes),
            Scheme::Slab | Scheme::DyCuckoo | Scheme::Sharded => Vec::new(),
        }
    }
}

impl FromStr for Scheme {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "warpdrive" => Ok(Scheme::WarpDrive),
            "stadium" => Ok(Scheme::Stadium),
            "slab" => Ok(Scheme::Slab),
            "dycuckoo" => Ok(Scheme::DyCuckoo),
            "sharded" => Ok(Scheme::Sharded),
            "two_level" | "two-level" | "twolevel" => Ok(Scheme::TwoLevel),
            other => Err(format!(
                "unknown scheme '{other}' (warpdrive, stadium, slab, dycuckoo or two_level)"
            )),
        }
    }
}

impl fmt::Display for Scheme {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
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
    /// A two-level cuckoo table of this bucket shape.
    TwoLevel {
        /// Hash functions × slots per subtable.
        shape: TwoLevelShape,
    },
}

impl Variant {
    /// A short label for progress lines within a scheme ("g 8", "host T 4", "cpu").
    pub fn label(self) -> String {
        match self {
            Variant::Cpu => "cpu".into(),
            Variant::WarpDrive { group } => warpdrive::label(group),
            Variant::Stadium {
                location,
                ticket_bits,
            } => stadium::label(location, ticket_bits),
            Variant::TwoLevel { shape } => two_level::label(shape),
        }
    }

    /// The label with the scheme's name ("warpdrive g 8", "stadium host T 4", "cpu").
    pub fn name(self) -> String {
        match self {
            Variant::Cpu => "cpu".into(),
            Variant::WarpDrive { .. } => format!("warpdrive {}", self.label()),
            Variant::Stadium { .. } => format!("stadium {}", self.label()),
            Variant::TwoLevel { .. } => format!("two_level {}", self.label()),
        }
    }

    /// Whether its buckets live in host memory (an out-of-core Stadium table).
    pub fn host_buckets(self) -> bool {
        matches!(
            self,
            Variant::Stadium {
                location: Location::Host,
                ..
            }
        )
    }

    /// Device bytes of its table of `cap` slots or buckets (estimate).
    pub(crate) fn device_bytes(self, kb: usize, vb: usize, cap: f64) -> f64 {
        match self {
            Variant::Cpu => 0.0,
            Variant::WarpDrive { .. } => warpdrive::device_bytes(kb, vb, cap),
            Variant::Stadium {
                location,
                ticket_bits,
            } => stadium::device_bytes(location, ticket_bits, kb, vb, cap),
            Variant::TwoLevel { shape } => two_level::device_bytes(shape, kb, vb, cap),
        }
    }

    /// Operations per second of its kernel (the model of [`Plan::estimate`]); `host_table`:
    /// bytes of its host buckets (0 in-core).
    pub(crate) fn op_rate(self, kb: usize, vb: usize, lf: f64, host_table: f64, op: Op) -> f64 {
        match self {
            Variant::Cpu => cpu::op_rate(),
            Variant::WarpDrive { .. } => warpdrive::op_rate(kb, vb, lf, op),
            Variant::Stadium {
                location,
                ticket_bits,
            } => stadium::op_rate(location, ticket_bits, lf, host_table, op),
            Variant::TwoLevel { .. } => two_level::op_rate(op),
        }
    }
}

/// A GPU table under test and what its rows report beside the measurements.
pub(crate) struct Built<K: Key, V: Value> {
    pub table: Box<dyn DeviceHashTable<K, V>>,
    pub group_size: Option<u32>,
    pub filter_bits: Option<u32>,
    pub stadium: Option<StadiumInfo>,
    /// two_level: the bucket shape.
    pub two_level: Option<TwoLevelShape>,
}

/// Makes a variant's GPU table of at least `capacity` slots or buckets.
pub(crate) fn build_table<K: Key, V: Value>(
    gpu: &Arc<Gpu>,
    plan: &Plan,
    v: Variant,
    capacity: usize,
) -> Result<Built<K, V>> {
    match v {
        Variant::WarpDrive { group } => warpdrive::build(gpu, plan, group, capacity),
        Variant::Stadium {
            location,
            ticket_bits,
        } => stadium::build(gpu, location, ticket_bits, capacity),
        Variant::TwoLevel { shape } => two_level::build(gpu, shape, capacity),
        Variant::Cpu => Err(Error::invalid("the GPU benchmark has no CPU variant")),
    }
}

/// Device bytes of the largest table any GPU scheme makes for `cap` slots of `kb` + `vb`
/// bytes (WarpDrive's slot layout or Stadium's device buckets, whichever is larger, + 10% for
/// the overflow filter, the board and slack): what a set keeps free beside its key sets.
pub(crate) fn largest_table_bytes(kb: usize, vb: usize, cap: usize) -> u64 {
    warpdrive::table_bytes(kb, vb, cap).max(cap * (kb + vb)) as u64 * 11 / 10
}
