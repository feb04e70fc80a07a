//! Every scheme of the library in one list: its name, paper, backend, the table configurations
//! the tests run on every backend, and every kernel specialisation it can ask NVRTC for. The
//! contract tests (`tests/common::backends`), the kernel compile test and the tools read it, so
//! adding a scheme is a kernel file, a table file and one entry here (a [`TableConfig`] variant
//! and a [`SchemeInfo`]).
//!
//! ```
//! use warpmap::table::registry::{schemes, TableConfig};
//! use warpmap::HashTable;
//! # fn main() -> warpmap::Result<()> {
//! assert!(schemes().iter().any(|s| s.name == "warpdrive"));
//! // Every scheme's test configurations, built where they can be (here: the CPU backend).
//! for scheme in schemes() {
//!     for (label, config) in (scheme.test_configs)() {
//!         if let TableConfig::Cpu { .. } = config {
//!             let mut t = config.build::<u64, u64>(None, 1000)?;
//!             t.insert(&[1, 2], &[3, 4])?;
//!             assert_eq!(t.len()?, 2, "{}/{label}", scheme.name);
//!         }
//!     }
//! }
//! # Ok(()) }
//! ```

use crate::device::Gpu;
use crate::hash::HashFunction;
use crate::kernels::KernelSource;
use crate::key::{Key, Value};
use crate::sharded::{self, ShardedConfig, ShardedMap, Transport};
use crate::table::dycuckoo::{self, DyCuckoo, DyCuckooConfig};
use crate::table::engine::locality::LocalityMode;
use crate::table::slab::{self, Slab, SlabConfig};
use crate::table::stadium::{self, InsertStrategy, Location, Stadium, StadiumConfig};
use crate::table::two_level::{self, TwoLevel, TwoLevelConfig, TwoLevelCpu};
use crate::table::warpdrive::{self, OverflowFilter, WarpDrive, WarpDriveConfig, GROUP_SIZES};
use crate::table::{Backend, DeviceHashTable, HashTable};
use crate::{CpuTable, Error, Result};
use std::sync::Arc;

/// A table's configuration, of any scheme: what a test or a tool builds, at any capacity.
#[derive(Clone, Debug)]
pub enum TableConfig {
    /// The CPU backend ([`CpuTable`]); `shards: None` for the default.
    Cpu {
        /// Shards of the table (`None`: the default).
        shards: Option<usize>,
    },
    /// A [`WarpDrive`] table (its capacity is replaced at build).
    WarpDrive(WarpDriveConfig),
    /// A [`Stadium`] table (its capacity is replaced at build).
    Stadium(StadiumConfig),
    /// A [`Slab`] hash (its capacity is replaced at build).
    Slab(SlabConfig),
    /// A [`DyCuckoo`] table (its capacity is replaced at build).
    DyCuckoo(DyCuckooConfig),
    /// A [`TwoLevel`] cuckoo table on the GPU (its capacity is replaced at build).
    TwoLevel(TwoLevelConfig),
    /// The two-level cuckoo table's CPU twin, [`TwoLevelCpu`] (its capacity is replaced at
    /// build).
    TwoLevelCpu(TwoLevelConfig),
    /// A [`ShardedMap`] over tables of another configuration (its capacity is replaced at
    /// build; built on the one GPU given, or on the host for CPU shards).
    Sharded(ShardedConfig),
}

impl TableConfig {
    /// The scheme's name, as [`HashTable::scheme`] reports it.
    pub fn scheme(&self) -> &'static str {
        match self {
            TableConfig::Cpu { .. } => "cpu",
            TableConfig::WarpDrive(_) => "warpdrive",
            TableConfig::Stadium(_) => "stadium",
            TableConfig::Slab(_) => "slab",
            TableConfig::DyCuckoo(_) => "dycuckoo",
            TableConfig::TwoLevel(_) => "two_level",
            TableConfig::TwoLevelCpu(_) => "two_level_cpu",
            TableConfig::Sharded(c) => match c.inner.backend() {
                Backend::Gpu => "sharded",
                Backend::Cpu => "sharded_cpu",
            },
        }
    }

    /// Where such a table lives.
    pub fn backend(&self) -> Backend {
        match self {
            TableConfig::Cpu { .. } | TableConfig::TwoLevelCpu(_) => Backend::Cpu,
            TableConfig::Sharded(c) => c.inner.backend(),
            _ => Backend::Gpu,
        }
    }

    /// Whether the scheme stores keys of `key_bytes` and values of `value_bytes` bytes.
    pub fn supports(&self, key_bytes: usize, value_bytes: usize) -> bool {
        match self {
            TableConfig::WarpDrive(_) => warpdrive::supports_widths(key_bytes, value_bytes),
            TableConfig::Slab(_) => slab::supports_widths(key_bytes, value_bytes),
            TableConfig::DyCuckoo(_) => dycuckoo::supports_widths(key_bytes, value_bytes),
            TableConfig::TwoLevel(_) | TableConfig::TwoLevelCpu(_) => {
                two_level::supports_widths(key_bytes, value_bytes)
            }
            TableConfig::Cpu { .. } | TableConfig::Stadium(_) => {
                key_bytes % 4 == 0 && value_bytes % 4 == 0
            }
            TableConfig::Sharded(c) => c.inner.supports(key_bytes, value_bytes),
        }
    }

    /// A table of at least `capacity` keys behind the common trait. `gpu` is needed for GPU
    /// schemes ([`Error::NoDevice`] without one).
    ///
    /// # Errors
    /// The scheme's own (see its `new`), and [`Error::NoDevice`] for a GPU scheme without `gpu`.
    pub fn build<K: Key, V: Value>(
        &self,
        gpu: Option<&Arc<Gpu>>,
        capacity: usize,
    ) -> Result<Box<dyn HashTable<K, V>>> {
        Ok(match self {
            TableConfig::Cpu { shards: None } => Box::new(CpuTable::<K, V>::new(capacity)?),
            TableConfig::Cpu { shards: Some(s) } => {
                Box::new(CpuTable::<K, V>::with_shards(capacity, *s)?)
            }
            TableConfig::TwoLevelCpu(c) => Box::new(TwoLevelCpu::<K, V>::new(TwoLevelConfig {
                capacity,
                ..c.clone()
            })?),
            TableConfig::Sharded(c) if c.inner.backend() == Backend::Cpu => {
                Box::new(ShardedMap::<K, V>::new(
                    ShardedConfig {
                        capacity,
                        ..c.clone()
                    },
                    &[],
                )?)
            }
            _ => self.build_device::<K, V>(need_gpu(gpu)?, capacity)? as Box<dyn HashTable<K, V>>,
        })
    }

    /// A GPU table of at least `capacity` keys behind the device trait.
    ///
    /// # Errors
    /// The scheme's own (see its `new`), and [`Error::Unsupported`] for the CPU backend.
    pub fn build_device<K: Key, V: Value>(
        &self,
        gpu: &Arc<Gpu>,
        capacity: usize,
    ) -> Result<Box<dyn DeviceHashTable<K, V>>> {
        Ok(match self {
            TableConfig::Cpu { .. } | TableConfig::TwoLevelCpu(_) => {
                return Err(Error::Unsupported(
                    "the CPU backend has no device-buffer operations".into(),
                ))
            }
            TableConfig::Sharded(c) => {
                if c.inner.backend() == Backend::Cpu {
                    return Err(Error::Unsupported(
                        "a sharded table of CPU tables has no device-buffer operations".into(),
                    ));
                }
                Box::new(ShardedMap::<K, V>::new(
                    ShardedConfig {
                        capacity,
                        ..c.clone()
                    },
                    std::slice::from_ref(gpu),
                )?)
            }
            TableConfig::TwoLevel(c) => Box::new(TwoLevel::<K, V>::new(
                gpu.clone(),
                TwoLevelConfig {
                    capacity,
                    ..c.clone()
                },
            )?),
            TableConfig::WarpDrive(c) => Box::new(WarpDrive::<K, V>::new(
                gpu.clone(),
                WarpDriveConfig {
                    capacity,
                    ..c.clone()
                },
            )?),
            TableConfig::Stadium(c) => Box::new(Stadium::<K, V>::new(
                gpu.clone(),
                StadiumConfig {
                    capacity,
                    ..c.clone()
                },
            )?),
            TableConfig::Slab(c) => Box::new(Slab::<K, V>::new(
                gpu.clone(),
                SlabConfig {
                    capacity,
                    ..c.clone()
                },
            )?),
            TableConfig::DyCuckoo(c) => Box::new(DyCuckoo::<K, V>::new(
                gpu.clone(),
                DyCuckooConfig {
                    capacity,
                    ..c.clone()
                },
            )?),
        })
    }
}

fn need_gpu(gpu: Option<&Arc<Gpu>>) -> Result<&Arc<Gpu>> {
    gpu.ok_or_else(|| Error::NoDevice {
        reason: "a GPU scheme was asked for without a GPU".into(),
    })
}

/// One scheme of the library.
#[derive(Clone, Copy, Debug)]
pub struct SchemeInfo {
    /// Its name ([`HashTable::scheme`]).
    pub name: &'static str,
    /// The paper it implements (a file of `shared/papers/`), or "" for the CPU backend.
    pub paper: &'static str,
    /// Where its tables live.
    pub backend: Backend,
    /// The configurations the contract tests run on every key and value type the scheme
    /// supports, each with a label (the test name is `<scheme>/<label>`, or the scheme's name
    /// for an empty label). The capacity of each is replaced by the test's.
    pub test_configs: fn() -> Vec<(&'static str, TableConfig)>,
    /// Every kernel specialisation the scheme can ask for (the compile test builds each for
    /// sm_80 and sm_90).
    pub kernel_sources: fn() -> Vec<KernelSource>,
}

/// Every scheme, CPU backend first.
pub fn schemes() -> &'static [SchemeInfo] {
    &SCHEMES
}

/// The scheme named `name`.
pub fn scheme(name: &str) -> Option<&'static SchemeInfo> {
    SCHEMES.iter().find(|s| s.name == name)
}

static SCHEMES: [SchemeInfo; 9] = [
    SchemeInfo {
        name: "cpu",
        paper: "",
        backend: Backend::Cpu,
        test_configs: cpu_test_configs,
        kernel_sources: Vec::new,
    },
    SchemeInfo {
        name: "stadium",
        paper: "stadium-hashing.txt",
        backend: Backend::Gpu,
        test_configs: stadium_test_configs,
        kernel_sources: stadium::all_kernel_sources,
    },
    SchemeInfo {
        name: "warpdrive",
        paper: "warpdrive.txt",
        backend: Backend::Gpu,
        test_configs: warpdrive_test_configs,
        kernel_sources: warpdrive::all_kernel_sources,
    },
    SchemeInfo {
        name: "slab",
        paper: "slab-hash.txt",
        backend: Backend::Gpu,
        test_configs: slab_test_configs,
        kernel_sources: slab::all_kernel_sources,
    },
    SchemeInfo {
        name: "dycuckoo",
        paper: "dycuckoo.txt",
        backend: Backend::Gpu,
        test_configs: dycuckoo_test_configs,
        kernel_sources: dycuckoo::all_kernel_sources,
    },
    SchemeInfo {
        name: "two_level",
        paper: "two-level-cuckoo.txt",
        backend: Backend::Gpu,
        test_configs: two_level_test_configs,
        kernel_sources: two_level::all_kernel_sources,
    },
    SchemeInfo {
        name: "two_level_cpu",
        paper: "two-level-cuckoo.txt",
        backend: Backend::Cpu,
        test_configs: two_level_cpu_test_configs,
        kernel_sources: Vec::new,
    },
    SchemeInfo {
        name: "sharded",
        paper: "warpdrive.txt",
        backend: Backend::Gpu,
        test_configs: sharded_test_configs,
        kernel_sources: sharded::split::all_kernel_sources,
    },
    SchemeInfo {
        name: "sharded_cpu",
        paper: "warpdrive.txt",
        backend: Backend::Cpu,
        test_configs: sharded_cpu_test_configs,
        kernel_sources: Vec::new,
    },
];

/// The default sharding and a single shard.
fn cpu_test_configs() -> Vec<(&'static str, TableConfig)> {
    vec![
        ("", TableConfig::Cpu { shards: None }),
        ("1-shard", TableConfig::Cpu { shards: Some(1) }),
    ]
}

/// 8-bit tickets with device buckets and basic Stash inserts, 1-bit tickets with collaborative
/// lanes (clStash), 2-bit tickets with Mueller's hash and the hybrid (switching at load 0.5,
/// which most contract tests pass), and 4-bit tickets with buckets in pinned host memory and
/// clStash. Device buckets are asked for explicitly: the default (`Location::Auto`) would choose
/// them too for small tables, but the labels promise them.
fn stadium_test_configs() -> Vec<(&'static str, TableConfig)> {
    let c = || StadiumConfig::new(0).location(Location::Device);
    vec![
        (
            "t8/stash",
            c().ticket_bits(8).insert_strategy(InsertStrategy::Stash),
        ),
        (
            "t1/clstash",
            c().ticket_bits(1).insert_strategy(InsertStrategy::ClStash),
        ),
        (
            "t2/mueller/hybrid",
            c().ticket_bits(2)
                .hash(HashFunction::Mueller)
                .insert_strategy(InsertStrategy::Hybrid { threshold: 0.5 }),
        ),
        (
            "t4/host/clstash",
            c().ticket_bits(4)
                .location(Location::Host)
                .insert_strategy(InsertStrategy::ClStash),
        ),
    ]
    .into_iter()
    .map(|(label, config)| (label, TableConfig::Stadium(config)))
    .collect()
}

/// Every group size (the default filter: 8 bits for small tables); Mueller's hash at |g| = 1
/// and 8; at |g| = 4 the paper's exact scheme (no overflow filter) and the smallest filter.
fn warpdrive_test_configs() -> Vec<(&'static str, TableConfig)> {
    const G: [&str; 6] = ["g1", "g2", "g4", "g8", "g16", "g32"];
    let c = |g: u32| WarpDriveConfig::new(0).group_size(g);
    let mut v: Vec<(&'static str, WarpDriveConfig)> =
        GROUP_SIZES.iter().zip(G).map(|(&g, l)| (l, c(g))).collect();
    v.push(("g1/mueller", c(1).hash(HashFunction::Mueller)));
    v.push(("g8/mueller", c(8).hash(HashFunction::Mueller)));
    v.push(("g4/no-filter", c(4).overflow_filter(OverflowFilter::Off)));
    v.push(("g4/filter1", c(4).overflow_filter(OverflowFilter::Bits(1))));
    v.into_iter()
        .map(|(label, config)| (label, TableConfig::WarpDrive(config)))
        .collect()
}

/// The defaults; Mueller's hash; and a table of 7 buckets and super blocks of one memory block
/// (1024 slabs), whose lists run long and whose pool grows by many super blocks in the tests.
fn slab_test_configs() -> Vec<(&'static str, TableConfig)> {
    vec![
        ("", SlabConfig::new(0)),
        ("mueller", SlabConfig::new(0).hash(HashFunction::Mueller)),
        ("long-lists", SlabConfig::new(0).buckets(7).memory_blocks(1)),
    ]
    .into_iter()
    .map(|(label, config)| (label, TableConfig::Slab(config)))
    .collect()
}

/// The paper's defaults (3 subtables, α 0.4, β 0.9); 2 subtables with short eviction chains
/// (the growth after failures runs often); 4 subtables with tight fill bounds (α 0.6, β 0.8:
/// resizes at most batches of the contract tests that fill or erase much).
fn dycuckoo_test_configs() -> Vec<(&'static str, TableConfig)> {
    vec![
        ("", DyCuckooConfig::new(0)),
        (
            "d2/chains4",
            DyCuckooConfig::new(0).subtables(2).max_evictions(4),
        ),
        (
            "d4/tight",
            DyCuckooConfig::new(0).subtables(4).fill_bounds(0.6, 0.8),
        ),
        // Every fresh first fit partitioned by locality (the build's path, Auto only for large
        // batches into large tables).
        (
            "partitioned",
            DyCuckooConfig::new(0).locality(LocalityMode::On),
        ),
    ]
    .into_iter()
    .map(|(label, config)| (label, TableConfig::DyCuckoo(config)))
    .collect()
}

/// The two-level configurations both backends run: the defaults; Mueller's hash with 4
/// functions; and tiny buckets (3 × 32 slots, few rounds) whose builds fail and start over with
/// new seeds, and whose tables split often.
fn two_level_configs() -> Vec<(&'static str, TwoLevelConfig)> {
    vec![
        ("", TwoLevelConfig::new(0)),
        (
            "d4/mueller",
            TwoLevelConfig::new(0)
                .hash_functions(4)
                .slots_per_subtable(384)
                .hash(HashFunction::Mueller),
        ),
        (
            "tiny-buckets",
            TwoLevelConfig::new(0)
                .slots_per_subtable(32)
                .max_probes(8)
                .max_rebuilds(4),
        ),
    ]
}

fn two_level_test_configs() -> Vec<(&'static str, TableConfig)> {
    two_level_configs()
        .into_iter()
        .map(|(l, c)| (l, TableConfig::TwoLevel(c)))
        .collect()
}

fn two_level_cpu_test_configs() -> Vec<(&'static str, TableConfig)> {
    two_level_configs()
        .into_iter()
        .map(|(l, c)| (l, TableConfig::TwoLevelCpu(c)))
        .collect()
}

/// Sharded tables on one GPU, labelled `<inner scheme>/<ranks>x<shards per rank>[/<exchange>]`:
/// one WarpDrive shard (straight to the table); four in place on one rank; two ranks of two
/// shards on one GPU, each shard working on both ranks' splits in place (the default
/// `Transport::Peer`), and the same through the copy exchange (both ways), host batches in a
/// pipeline of 1000-key chunks; Stadium, the slab hash (mixed batches with erases, 700-key chunks, super blocks of
/// one memory block so that the capacity the tests fill is ~64 000 pairs) and DyCuckoo
/// (growth) through the exchange; and, with the `nccl` feature, NCCL with one rank of two
/// shards (whose parts stay in place: NCCL moves parts only between GPUs, which
/// tests/sharded.rs runs wherever the machine has several), and a one-process group
/// (`NcclGroup`: the protocol of a table over processes, its part sizes through NCCL's
/// all-gather, 1000-key chunks).
fn sharded_test_configs() -> Vec<(&'static str, TableConfig)> {
    let wd = || TableConfig::WarpDrive(WarpDriveConfig::new(0));
    let c = |inner: TableConfig, ranks: usize, shards: usize| {
        ShardedConfig::new(0, inner)
            .ranks_per_gpu(ranks)
            .shards_per_rank(shards)
    };
    #[allow(unused_mut)]
    let mut v = vec![
        ("warpdrive/1x1", c(wd(), 1, 1)),
        ("warpdrive/1x4", c(wd(), 1, 4)),
        ("warpdrive/2x2", c(wd(), 2, 2).pipeline_batch(1000)),
        (
            "warpdrive/2x2/copy",
            c(wd(), 2, 2)
                .pipeline_batch(1000)
                .transport(Transport::Copy),
        ),
        (
            "stadium/2x1",
            c(
                TableConfig::Stadium(StadiumConfig::new(0).location(Location::Device)),
                2,
                1,
            ),
        ),
        (
            "slab/2x2",
            // Super blocks of one memory block: the shards report a capacity of ~16 000
            // pairs (not ~1M: the contract tests fill to the capacity reported, which in
            // 700-key chunks took 30-60 s per test) and grow beyond it.
            c(TableConfig::Slab(SlabConfig::new(0).memory_blocks(1)), 2, 2).pipeline_batch(700),
        ),
        (
            "dycuckoo/1x3",
            c(TableConfig::DyCuckoo(DyCuckooConfig::new(0)), 1, 3),
        ),
    ];
    #[cfg(feature = "nccl")]
    v.push((
        "warpdrive/1x2/nccl",
        c(wd(), 1, 2).transport(Transport::Nccl),
    ));
    #[cfg(feature = "nccl")]
    v.push((
        "warpdrive/1x3/nccl-group",
        c(wd(), 1, 3)
            .transport(Transport::NcclGroup)
            .pipeline_batch(1000),
    ));
    v.into_iter()
        .map(|(label, config)| (label, TableConfig::Sharded(config)))
        .collect()
}

/// Sharded tables of CPU tables: three of the CPU backend, two of the two-level twin.
fn sharded_cpu_test_configs() -> Vec<(&'static str, TableConfig)> {
    vec![
        (
            "cpu/3",
            ShardedConfig::new(0, TableConfig::Cpu { shards: None }).shards_per_rank(3),
        ),
        (
            "two_level_cpu/2",
            ShardedConfig::new(0, TableConfig::TwoLevelCpu(TwoLevelConfig::new(0)))
                .shards_per_rank(2),
        ),
    ]
    .into_iter()
    .map(|(label, config)| (label, TableConfig::Sharded(config)))
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_match_the_configs() {
        let mut names: Vec<&str> = schemes().iter().map(|s| s.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), schemes().len());
        for s in schemes() {
            let configs = (s.test_configs)();
            assert!(!configs.is_empty(), "{} has no test configurations", s.name);
            let mut labels: Vec<&str> = configs.iter().map(|(l, _)| *l).collect();
            labels.sort_unstable();
            labels.dedup();
            assert_eq!(labels.len(), configs.len(), "{}: labels repeat", s.name);
            for (label, c) in configs {
                assert_eq!(c.scheme(), s.name, "{}/{label}", s.name);
                assert_eq!(c.backend(), s.backend, "{}/{label}", s.name);
            }
            assert_eq!(
                (s.kernel_sources)().is_empty(),
                s.backend == Backend::Cpu,
                "{}: GPU schemes have kernels",
                s.name
            );
        }
    }

    #[test]
    fn gpu_schemes_need_a_gpu() {
        let c = TableConfig::WarpDrive(WarpDriveConfig::new(10));
        assert!(matches!(
            c.build::<u32, u32>(None, 10),
            Err(Error::NoDevice { .. })
        ));
    }
}
