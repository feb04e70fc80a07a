//! The experiments, one file per paper figure where a figure needs code of its own:
//!
//! | file | what | papers' figures |
//! |---|---|---|
//! | [`bulk_ops`] | every bulk operation of each table, per load factor, timed alone and verified ([`run`] without `--ops mixed`) | WarpDrive Figs. 7 and 8 (presets `fig7`, `fig8`), the `compare` table, Stadium Figs. 14, 16, 17 (`stadium`) and 19 (`fig19`): the same loop, set up by [`Preset`](crate::plan::Preset)s |
//! | [`stadium_fig15`] | mixed versus phase-separated insert/find batches, concurrency efficiency ([`run`] with `--ops mixed`) | Stadium Fig. 15 (`fig15`) |
//! | [`stadium_fig13_fig18`] | Stadium's insert strategies: the hybrid threshold, and Stash, clStash and the hybrid side by side (`warpmap lanes`) | Stadium Fig. 13, Fig. 18's insert rates, Table I |
//! | [`stadium_outofcore`] | a Stadium table whose host buckets exceed the GPU's memory, built and queried on the device (`warpmap outofcore`) | Stadium §III, out-of-core performance |
//! | [`slab_fig4_fig5`] | the slab hash's build, search hit and search miss against memory utilisation and against n (`--scheme slab --preset slab-fig4`, `slab-fig5`) | SlabHash Figs. 4 and 5 |
//! | [`slab_fig6`] | incremental batches into one slab table against rebuilding WarpDrive after every batch (`slab-fig6`) | SlabHash Fig. 6 |
//! | [`slab_fig7`] | concurrent mixed batches Γ0, Γ1, Γ2 against the initial utilisation (`slab-fig7`) | SlabHash Fig. 7a |
//! | [`slab_alloc`] | SlabAlloc's allocation and free rate (`slab-alloc`) | SlabHash §V |
//! | [`slab_compare`] | the target cells beside their targets (`slab-compare`) | — |
//!
//! The slab presets run through [`run_slab`] into a [`SlabReport`] of their own
//! ([`slab_report`], [`slab_run`]).
//!
//! [`run`] is `warpmap bench`: it picks the backend, resolves the plan and runs [`bulk_ops`] or
//! [`stadium_fig15`] on it, into one [`Report`].

pub mod bulk_ops;
pub mod dycuckoo_report;
pub mod dycuckoo_run;
pub mod sharded;
pub mod slab_alloc;
pub mod slab_compare;
pub mod slab_fig4_fig5;
pub mod slab_fig6;
pub mod slab_fig7;
pub mod slab_report;
pub mod slab_run;
pub mod stadium_fig13_fig18;
pub mod stadium_fig15;
pub mod stadium_outofcore;
pub mod two_level_crossover;

use crate::harness::report::{Progress, Report, Roofline};
use crate::harness::timing::utc_now;
use crate::plan::{resolve, BenchConfig, Distribution};
use crate::schemes::stadium::location_name;
pub use dycuckoo_report::{DcProgress, DcRow, DyCuckooReport};
pub use dycuckoo_run::run_dycuckoo;
pub use sharded::{run_sharded, ShardedBenchConfig, ShardedReport, ShardedRow};
pub use slab_report::{SlabProgress, SlabReport, SlabRow};
pub use slab_run::run_slab;
use std::time::Instant;
pub use two_level_crossover::{run_crossover, CrossoverConfig, CrossoverReport, CrossoverRow};
use warpmap::device::compile_log;
use warpmap::table::Backend;
use warpmap::{Gpu, Result};

/// Runs the benchmark. `progress` is called as steps start and finish (from this thread).
///
/// Errors are returned for what prevents measuring (a driver failure, NVRTC missing, out of
/// memory, bad configuration). A wrong result is not an error: it makes its result's
/// `verified` false (see [`Report::all_verified`]).
pub fn run(cfg: &BenchConfig, progress: &mut dyn FnMut(Progress)) -> Result<Report> {
    let started = Instant::now();
    let date = utc_now();
    let (gpu, backend_note) = if cfg.force_cpu {
        (
            None,
            Some("the CPU backend was forced (--cpu); no GPU was used".to_string()),
        )
    } else {
        match Gpu::default_gpu() {
            Ok(g) => (Some(g), None),
            Err(e) => (
                None,
                Some(format!(
                    "no GPU found ({e}): the CPU backend (warpmap::CpuTable) was used"
                )),
            ),
        }
    };
    let backend = if gpu.is_some() {
        Backend::Gpu
    } else {
        Backend::Cpu
    };
    let plan = resolve(cfg, backend)?;
    let host_threads = rayon::current_num_threads();
    let estimate = plan.estimate(host_threads);
    let method = plan.method();
    let (device, roofline, results) = match &gpu {
        Some(g) => {
            let (roofline, results) = if plan.mixed() {
                stadium_fig15::gpu::run(g, &plan, progress)?
            } else {
                bulk_ops::gpu::run(g, &plan, progress)?
            };
            (format!("{} sm_{}", g.name(), g.sm()), roofline, results)
        }
        None => {
            let results = if plan.mixed() {
                stadium_fig15::cpu::run(&plan, progress)?
            } else {
                bulk_ops::cpu::run(&plan, progress)?
            };
            (
                format!("CPU ({host_threads} threads)"),
                Roofline::default(),
                results,
            )
        }
    };
    Ok(Report {
        device,
        commit: cfg.commit.clone(),
        date,
        roofline,
        results,
        backend,
        backend_note,
        method,
        quick: cfg.quick,
        slots: plan.slots,
        runs: plan.runs,
        host_threads,
        compile: compile_log(),
        wall_s: started.elapsed().as_secs_f64(),
        preset: plan.preset,
        keys_log2: plan.keys_log2,
        load_factors: plan.load_factors.clone(),
        group_sizes: plan.group_sizes.clone(),
        scheme: plan.scheme,
        ticket_bits: plan.ticket_bits.clone(),
        locations: plan.locations.iter().map(|l| location_name(*l)).collect(),
        host_keys_log2: plan
            .host_keys(Distribution::Unique)
            .filter(|n| Some(*n) != plan.keys())
            .map(|n| n.trailing_zeros()),
        slice_log2: plan.slice_log2.clone(),
        distributions: plan.distributions.clone(),
        types: plan.types.clone(),
        ops: plan.ops.clone(),
        zipf: plan.zipf_info(),
        notes: plan.notes.clone(),
        estimate,
    })
}

/// The method line of a backend, for printing before the run starts (a [`Plan`](crate::plan::Plan)'s
/// [`method`](crate::plan::Plan::method) adds what the plan changes).
pub fn method_for(backend: Backend) -> &'static str {
    match backend {
        Backend::Gpu => bulk_ops::gpu::METHOD,
        Backend::Cpu => bulk_ops::cpu::METHOD,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{KvType, Op, Preset, DEFAULT_LOAD_FACTORS, FIG19_LOAD_FACTOR};

    #[test]
    fn quick_cpu_bench_verifies() {
        let cfg = BenchConfig {
            quick: true,
            force_cpu: true,
            slots_log2: Some(12),
            ..Default::default()
        };
        let mut steps = 0;
        let r = run(&cfg, &mut |_| steps += 1).unwrap();
        assert!(steps > 0);
        assert_eq!(r.backend, Backend::Cpu);
        assert!(r.backend_note.is_some());
        assert_eq!(
            r.results.len(),
            2 * DEFAULT_LOAD_FACTORS.len() * Op::DEFAULT.len()
        );
        assert!(
            r.all_verified(),
            "{:?}",
            r.results.iter().find(|x| !x.verified)
        );
        assert!(r.roofline.gather8_gops.is_none());
        assert!(r
            .results
            .iter()
            .all(|x| x.distribution == Distribution::Unique && x.distinct.is_none()));
    }

    #[test]
    fn cpu_fixed_keys_both_distributions_verify() {
        let cfg = BenchConfig {
            force_cpu: true,
            keys_log2: Some(12),
            runs: Some(2),
            load_factors: Some(vec![0.5, 0.99]),
            distributions: Some(vec![Distribution::Unique, Distribution::Zipf]),
            group_sizes: Some(vec![1, 32]),
            ..Default::default()
        };
        let r = run(&cfg, &mut |_| {}).unwrap();
        assert!(
            r.all_verified(),
            "{:?}",
            r.results.iter().find(|x| !x.verified)
        );
        assert_eq!(r.results.len(), 2 * 2 * 2 * Op::DEFAULT.len());
        assert_eq!(r.keys_log2, Some(12));
        assert!(r.zipf.is_some());
        assert!(r.notes.iter().any(|n| n.contains("GPU only")));
        for x in &r.results {
            assert_eq!(x.n, 1 << 12);
            assert!(x.group_size.is_none());
            match x.distribution {
                Distribution::Unique => {
                    assert!(x.distinct.is_none());
                    assert_eq!(x.capacity, (4096.0 / x.load_factor).ceil() as usize);
                }
                Distribution::Zipf => {
                    let d = x.distinct.unwrap();
                    assert!(d < x.n && d > x.n / 10, "{d}");
                    // Occupancy load: the table holds the distinct keys at the load factor.
                    let occ = x.occupancy.unwrap();
                    assert!(
                        (occ - x.load_factor).abs() < 0.01,
                        "{occ} vs {}",
                        x.load_factor
                    );
                }
            }
        }
    }

    /// The two extra types on the CPU backend: every row verified and labelled with its own key
    /// and value types, in both sizing modes and both distributions.
    #[test]
    fn cpu_u32_u64_and_u128_u64_verify() {
        let want = |t: KvType| match t {
            KvType::U32U64 => ("u32", "u64", 4, 8),
            KvType::U128U64 => ("u128", "u64", 16, 8),
            _ => unreachable!(),
        };
        let types = vec![KvType::U32U64, KvType::U128U64];
        for (keys_log2, slots_log2) in [(None, Some(12)), (Some(11), None)] {
            let cfg = BenchConfig {
                quick: true,
                force_cpu: true,
                slots_log2,
                keys_log2,
                runs: Some(2),
                types: Some(types.clone()),
                distributions: Some(Distribution::ALL.to_vec()),
                ..Default::default()
            };
            let r = run(&cfg, &mut |_| {}).unwrap();
            assert_eq!(r.types, types);
            assert_eq!(
                r.results.len(),
                2 * 2 * DEFAULT_LOAD_FACTORS.len() * Op::DEFAULT.len()
            );
            assert!(
                r.all_verified(),
                "{:?}",
                r.results.iter().find(|x| !x.verified)
            );
            // Rows come type by type, in the order asked.
            let half = r.results.len() / 2;
            for (i, x) in r.results.iter().enumerate() {
                let t = types[i / half];
                let (kt, vt, kb, vb) = want(t);
                assert_eq!((x.key_type, x.value_type), (kt, vt), "row {i}");
                assert_eq!((x.key_bytes, x.value_bytes), (kb, vb), "row {i}");
                assert_eq!((t.key_bytes(), t.value_bytes()), (kb, vb));
                assert_eq!(x.runs, 2);
                assert_eq!(x.distinct.is_some(), x.distribution == Distribution::Zipf);
            }
        }
    }

    /// Every fig19 key/value size through the per-operation loop on the CPU backend.
    #[test]
    fn cpu_fig19_types_verify() {
        let cfg = BenchConfig {
            force_cpu: true,
            preset: Some(Preset::Fig19),
            keys_log2: Some(10),
            runs: Some(1),
            ..Default::default()
        };
        let r = run(&cfg, &mut |_| {}).unwrap();
        assert_eq!(r.results.len(), KvType::FIG19.len() * 3);
        assert!(
            r.all_verified(),
            "{:?}",
            r.results.iter().find(|x| !x.verified)
        );
        for (t, rows) in KvType::FIG19.iter().zip(r.results.chunks(3)) {
            for x in rows {
                assert_eq!(
                    (x.key_bytes, x.value_bytes),
                    (t.key_bytes(), t.value_bytes())
                );
                assert_eq!(x.load_factor, FIG19_LOAD_FACTOR);
            }
        }
        assert!(r.results.iter().any(|x| x.value_type == "[u8; 256]"));
        assert!(r.results.iter().any(|x| x.key_type == "[u8; 64]"));
    }

    /// The mixed experiment through `run` on the CPU backend: the report says what it was.
    #[test]
    fn cpu_mixed_report() {
        let cfg = BenchConfig {
            force_cpu: true,
            preset: Some(Preset::Fig15),
            keys_log2: Some(11),
            runs: Some(1),
            slice_log2: Some(vec![8]),
            load_factors: Some(vec![0.8]),
            ..Default::default()
        };
        let r = run(&cfg, &mut |_| {}).unwrap();
        assert_eq!(r.results.len(), 1);
        assert!(r.all_verified(), "{:?}", r.results[0].failures);
        assert_eq!(r.ops, vec![Op::Mixed]);
        assert_eq!(r.slice_log2, vec![8]);
        assert_eq!(r.results[0].slice_ops, Some(256));
        assert!(r.method.contains("Mixed experiment"));
    }

    #[test]
    fn cpu_find_half_verifies() {
        for keys_log2 in [None, Some(11)] {
            let cfg = BenchConfig {
                force_cpu: true,
                slots_log2: Some(12),
                keys_log2,
                runs: Some(2),
                load_factors: Some(vec![0.5, 0.95]),
                types: Some(vec![KvType::U32, KvType::U128U64]),
                distributions: Some(Distribution::ALL.to_vec()),
                ops: Some(vec![Op::FindHalf, Op::Insert]),
                ..Default::default()
            };
            let r = run(&cfg, &mut |_| {}).unwrap();
            assert_eq!(r.results.len(), 2 * 2 * 2 * 2);
            assert!(
                r.all_verified(),
                "{:?}",
                r.results.iter().find(|x| !x.verified)
            );
            assert!(r.results.iter().any(|x| x.op == Op::FindHalf));
            assert!(r.method.contains("find_half: n queries"));
        }
    }

    #[test]
    fn cpu_selected_ops_only() {
        let cfg = BenchConfig {
            force_cpu: true,
            slots_log2: Some(12),
            runs: Some(1),
            load_factors: Some(vec![0.9]),
            types: Some(vec![KvType::U64]),
            ops: Some(vec![Op::FindMiss, Op::FindHit]),
            distributions: Some(vec![Distribution::Zipf]),
            ..Default::default()
        };
        let r = run(&cfg, &mut |_| {}).unwrap();
        let ops: Vec<Op> = r.results.iter().map(|x| x.op).collect();
        assert_eq!(ops, vec![Op::FindHit, Op::FindMiss]);
        assert!(r.all_verified());
        assert!(r.results.iter().all(|x| x.key_type == "u64"));
        assert!(r
            .method
            .contains("Operations measured: find_hit, find_miss"));
    }
}
