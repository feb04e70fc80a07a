//! The benchmarks of warpmap's GPU hash tables, outside the library (they use only its public
//! API, with its `serde` feature): the harness, the plans and presets, what the benchmark knows
//! of each scheme, and one experiment per paper figure. The `warpmap` command
//! (crates/warpmap-cli) prints and charts what they return.
//!
//! - [`harness`]: timing ([`harness::timing`]), verification ([`harness::verify`]), the report
//!   ([`harness::report`]), the in-run roofline and out-of-core bound
//!   ([`harness::roofline`]), the GPU session every GPU experiment runs in
//!   ([`harness::session`]) and the host key sets ([`harness::workloads`]);
//! - [`plan`]: a [`BenchConfig`] (the flags) resolved into a [`Plan`]: configuration
//!   (`config.rs`), presets (`presets.rs`), resolution (`resolve.rs`) and the size and time
//!   estimate (`estimate.rs`);
//! - [`schemes`]: per scheme, what a table variant is and how to build it ([`schemes::warpdrive`],
//!   [`schemes::stadium`], [`schemes::slab`], [`schemes::cpu`]);
//! - [`experiments`]: one file per paper figure (see its table);
//! - [`kernels`]: the benchmark's own CUDA kernels (`kernels/roofline.cu`,
//!   `kernels/workload.cu`).
//!
//! [`run`] is `warpmap bench`: the in-run roofline, then every bulk operation of each table at
//! several load factors, timed and verified, into one serialisable [`Report`].
//!
//! On a GPU ([`Gpu::default_gpu`](warpmap::Gpu::default_gpu) succeeds and [`BenchConfig::force_cpu`] is off):
//! 1. the roofline ([`harness::roofline`]): random 8-byte gathers and CASes and a large copy, on a table
//!    far beyond L2, timed with CUDA events, warm-up then median;
//! 2. the [`WarpDrive`](warpmap::WarpDrive) table with `u32`/`u32` and `u64`/`u64` pairs, at load
//!    factors 0.5, 0.8, 0.9 and 0.95 of 2^26 slots: insert, find of present keys (`find_hit`),
//!    find of absent keys (`find_miss`), `contains` and `erase`, each timed alone with CUDA
//!    events around the kernel (inputs are on the device before timing starts). Every run draws
//!    fresh keys (a new seed), clears the table, and verifies every operation.
//!
//! Without a GPU (or with `force_cpu`) the same operations run on [`CpuTable`](warpmap::CpuTable),
//! timed with [`std::time::Instant`] around each bulk call on host slices, at sizes that finish
//! in well under a minute on two cores; the roofline is `null` and the report says why the CPU
//! was used.
//!
//! Stadium hashing ([`Scheme::Stadium`], `--scheme stadium`): the same loop over a
//! [`Stadium`](warpmap::Stadium) table per (bucket location, ticket size) instead of per group
//! size, rows with `scheme: "stadium"`, `location`, `ticket_bits` and `bound_ratio`. Host-bucket
//! (out-of-core) rows are compared with a bound measured in the same run for each table size:
//! random writes and reads of records of the table's key + value bytes into a pinned mapped host
//! buffer of the table's bucket bytes ([`harness::roofline::measure_host_bound`], in
//! [`Roofline::host_bounds`]); their `bound_ratio` is the rate over the random-write bound
//! (insert, erase) or the random-read bound (finds, contains). Device-bucket rows have
//! `bound_ratio` = `roofline_ratio` (the gather / CAS roofline). [`Preset::Stadium`] is the
//! paper's Figs. 14, 16 and 17 setup; [`Preset::Fig19`] its Fig. 19 (the same loop over the
//! key and value sizes of [`KvType::FIG19`]).
//!
//! The mixed experiment ([`Op::Mixed`], [`Preset::Fig15`], the paper's Fig. 15) is a loop of its
//! own ([`experiments::stadium_fig15`]): keys inserted in slices, each slice also finding the previous slice's keys,
//! timed once as one mixed insert/find batch per slice and once as an insert batch then a find
//! batch per slice; its rows carry `concurrency_efficiency` (separated time / mixed time),
//! `separated_ms` and `slice_ops`. With Stadium device buckets, WarpDrive (default group size)
//! runs the same slices for comparison.
//!
//! The two-level cuckoo table ([`Scheme::TwoLevel`], `--scheme two_level`): the same loop over
//! a [`TwoLevel`](warpmap::TwoLevel) table per bucket shape ([`TwoLevelShape`]: hash functions ×
//! slots per subtable); rows carry the shape, the fill the table ended at (`fill`: a table that
//! split buckets ends below its nominal load factor) and its `counters` (bucket rebuilds,
//! splits, buckets). Presets: [`Preset::TwoLevelCompare`] (the target cells),
//! [`Preset::TwoLevelBuckets`] (the paper's bucket-load chart) and [`Preset::TwoLevelLoad`]
//! (its REG_LOAD chart).
//!
//! The two-level paper's GPU-vs-CPU question has its own loop ([`run_crossover`],
//! `--preset two-level-crossover`): sizes 2^10 .. 2^28, the GPU table with and without
//! host↔device transfers against its CPU twin and `CpuTable` on all host threads and hashbrown
//! on one, and where the GPU starts to pay ([`CrossoverReport`]).
//!
//! The slab hash ([`Scheme::Slab`], `--scheme slab`) has presets of its own ([`SlabPreset`]:
//! the slab hash paper's Figs. 4 to 7, SlabAlloc's rate and the target cells), resolved by
//! [`resolve_slab`] into a [`SlabPlan`] and run by [`run_slab`] into a [`SlabReport`] (a row per
//! cell with its memory utilisation; see [`experiments`]).
//!
//! Beyond the default: a fixed number of keys per load factor with a table per load factor
//! ([`BenchConfig::keys_log2`]), several WarpDrive group sizes ([`BenchConfig::group_sizes`]),
//! Zipf keys ([`Distribution::Zipf`]), a choice of types (also `u32`→`u64` and `u128`→`u64`:
//! [`KvType`]) and operations, and the presets
//! [`Preset::Fig7`], [`Preset::Fig8`] (the WarpDrive paper's figures) and [`Preset::Compare`].
//! [`resolve`] turns a configuration into the [`Plan`] that runs, with a size and time
//! [`Estimate`].
//!
//! ```no_run
//! use warpmap_bench::{run, BenchConfig};
//! let cfg = BenchConfig { quick: true, ..BenchConfig::default() };
//! let report = run(&cfg, &mut |p| eprintln!("{}/{} {}", p.done, p.total, p.message))?;
//! assert!(report.all_verified());
//! println!("{}", report.results.len());
//! # Ok::<(), warpmap::Error>(())
//! ```

#![warn(missing_docs)]

pub mod experiments;
pub mod harness;
pub mod kernels;
pub mod plan;
pub mod schemes;

pub use experiments::{
    method_for, run, run_crossover, run_dycuckoo, run_sharded, run_slab, CrossoverConfig,
    CrossoverReport, CrossoverRow, DcProgress, DcRow, DyCuckooReport, ShardedBenchConfig,
    ShardedReport, ShardedRow, SlabProgress, SlabReport, SlabRow,
};
pub use harness::report::{BenchResult, HostBound, Progress, Report, Roofline};
pub use harness::timing::{format_utc, median, utc_now};
pub use harness::workloads::distinct_count;
pub use plan::{
    resolve, resolve_dycuckoo, resolve_slab, BenchConfig, Distribution, DyCuckooBenchConfig,
    DyCuckooPlan, DyCuckooPreset, Estimate, KvType, Mix, Op, Plan, Preset, SlabBenchConfig,
    SlabPlan, SlabPreset, ZipfInfo, ZipfLoad, CPU_MAX_KEYS_LOG2, DEFAULT_LOAD_FACTORS,
    DEFAULT_SLICE_LOG2, DEFAULT_ZIPF_UNIVERSE_LOG2, FIG19_LOAD_FACTOR, FIG_HOST_KEYS_LOG2,
    FIG_KEYS_LOG2, GPU_MAX_KEYS_LOG2, QUICK_KEYS_LOG2, STADIUM_HOST_KEYS_LOG2,
};
pub use schemes::stadium::{location_name, parse_locations};
pub use schemes::two_level::TwoLevelShape;
pub use schemes::{Scheme, Variant};
