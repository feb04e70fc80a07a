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

mod config;
mod dycuckoo;
mod estimate;
mod presets;
mod resolve;
mod slab;

pub(crate) use config::{dedup_in_place, with_kv_types};
pub use config::{
    BenchConfig, Distribution, KvType, Op, ZipfInfo, ZipfLoad, CPU_MAX_KEYS_LOG2,
    DEFAULT_LOAD_FACTORS, DEFAULT_SLICE_LOG2, DEFAULT_ZIPF_UNIVERSE_LOG2, GPU_MAX_KEYS_LOG2,
    QUICK_KEYS_LOG2,
};
pub use dycuckoo::{
    resolve_dycuckoo, DyCuckooBenchConfig, DyCuckooPlan, DyCuckooPreset, COMPARE_FILLS,
    DYNAMIC_ALPHA, DYNAMIC_BATCHES, DYNAMIC_BETA, DYNAMIC_RATIO, FILL_SWEEP, STATIC_BETA,
};
pub(crate) use estimate::host_random_rate;
pub use estimate::Estimate;
pub use presets::{
    Preset, FIG19_LOAD_FACTOR, FIG_HOST_KEYS_LOG2, FIG_KEYS_LOG2, STADIUM_HOST_KEYS_LOG2,
};
pub(crate) use resolve::keys_for;
pub use resolve::{resolve, Plan};
pub use slab::{
    resolve_slab, Mix, SlabBenchConfig, SlabPlan, SlabPreset, COMPARE_BATCHES_LOG2,
    COMPARE_UTILIZATION, MAX_UTILIZATION, UTILIZATION_SWEEP,
};
