//! `warpmap bench --scheme slab`: the slab hash's presets ([`SlabPreset`]) on the GPU. [`run_slab`]
//! resolves the plan, measures the in-run roofline (not for `slab-alloc`), then runs the
//! preset's cells ([`super::slab_fig4_fig5`], [`super::slab_fig6`], [`super::slab_fig7`],
//! [`super::slab_alloc`], [`super::slab_compare`]) for every key/value type, and returns the
//! [`SlabReport`]. The cells share a context (`SlabCx`: the GPU, the plan, the timer, the
//! roofline, the rows so far).

use super::slab_report::{target_rows, SlabProgress, SlabReport, SlabRow};
use super::{slab_alloc, slab_compare, slab_fig4_fig5, slab_fig6, slab_fig7};
use crate::harness::report::Roofline;
use crate::harness::roofline::{self, RooflineConfig};
use crate::harness::timing::utc_now;
use crate::harness::workloads::run_seed;
use crate::plan::{resolve_slab, KvType, SlabBenchConfig, SlabPlan, SlabPreset};
use std::sync::Arc;
use std::time::Instant;
use warpmap::device::{compile_log, Timer};
use warpmap::{Gpu, Key, Result, Value};

/// The run number of a cell's calibration key set (beyond every timed run's).
pub(crate) const CALIBRATION_RUN: usize = 1 << 30;

/// What every cell of a slab benchmark shares.
pub(crate) struct SlabCx<'a> {
    pub gpu: &'a Arc<Gpu>,
    pub plan: &'a SlabPlan,
    pub timer: &'a Timer,
    pub roofline: &'a Roofline,
    pub rows: Vec<SlabRow>,
    pub progress: &'a mut dyn FnMut(SlabProgress),
    /// The seed tag of the key/value type being measured.
    pub type_tag: u64,
}

impl SlabCx<'_> {
    /// Reports what runs now.
    pub fn say(&mut self, s: String) {
        (self.progress)(SlabProgress::Step(s));
    }

    /// Adds a finished row (with its roofline ratio) and reports it.
    pub fn push(&mut self, row: SlabRow) {
        let row = row.with_roofline(self.roofline);
        (self.progress)(SlabProgress::Row(&row));
        self.rows.push(row);
    }

    /// The seed of run `run` of cell `cell` (distinct per type, cell and run).
    pub fn seed(&self, cell: usize, run: usize) -> u64 {
        run_seed(self.plan.seed, self.type_tag, cell, run)
    }
}

/// Runs a slab preset on the default GPU. `progress` hears each step and each finished row.
///
/// Errors are what prevents measuring (no GPU, a driver failure, NVRTC missing, out of memory,
/// a bad configuration); a wrong result makes its row's `verified` false.
pub fn run_slab(
    cfg: &SlabBenchConfig,
    progress: &mut dyn FnMut(SlabProgress),
) -> Result<SlabReport> {
    let started = Instant::now();
    let date = utc_now();
    let plan = resolve_slab(cfg)?;
    let gpu = Gpu::default_gpu()?;
    let roofline = if plan.preset == SlabPreset::SlabAlloc || !cfg.roofline {
        Roofline::default()
    } else {
        let rcfg = RooflineConfig::new(plan.quick);
        progress(SlabProgress::Step(format!(
            "roofline: {} u64, {} random accesses per kernel",
            rcfg.elements, rcfg.ops
        )));
        roofline::measure(&gpu, rcfg, &mut |what| {
            progress(SlabProgress::Step(format!("roofline {what} done")))
        })?
    };
    let timer = gpu.timer()?;
    let mut rows = Vec::new();
    // The allocator's rate does not depend on the pair type: measured once.
    let types: Vec<KvType> = if plan.preset == SlabPreset::SlabAlloc {
        vec![KvType::U32]
    } else {
        plan.types.clone()
    };
    for ty in types {
        let mut cx = SlabCx {
            gpu: &gpu,
            plan: &plan,
            timer: &timer,
            roofline: &roofline,
            rows: Vec::new(),
            progress: &mut *progress,
            type_tag: ty.seed_tag(),
        };
        match ty {
            KvType::U64 => run_type::<u64, u64>(&mut cx)?,
            _ => run_type::<u32, u32>(&mut cx)?,
        }
        rows.append(&mut cx.rows);
    }
    let targets = if plan.preset == SlabPreset::SlabCompare {
        target_rows(&rows)
    } else {
        Vec::new()
    };
    Ok(SlabReport {
        preset: plan.preset,
        device: format!("{} sm_{}", gpu.name(), gpu.sm()),
        commit: cfg.commit.clone(),
        date,
        method: plan.method(),
        plan,
        roofline,
        rows,
        targets,
        host_threads: rayon::current_num_threads(),
        compile: compile_log(),
        wall_s: started.elapsed().as_secs_f64(),
    })
}

/// The preset's cells for one key/value type.
fn run_type<K: Key, V: Value>(cx: &mut SlabCx<'_>) -> Result<()> {
    let plan = cx.plan;
    match plan.preset {
        SlabPreset::SlabFig4 | SlabPreset::SlabFig5 => {
            let fig = if plan.preset == SlabPreset::SlabFig4 {
                "fig4"
            } else {
                "fig5"
            };
            let mut cell = 0;
            for n in plan.sizes() {
                for &u in &plan.utilizations {
                    slab_fig4_fig5::bulk_cell::<K, V>(cx, fig, n, u, cell)?;
                    cell += 1;
                }
            }
            Ok(())
        }
        SlabPreset::SlabFig6 => slab_fig6::run::<K, V>(cx),
        SlabPreset::SlabFig7 => slab_fig7::run::<K, V>(cx),
        SlabPreset::SlabAlloc => slab_alloc::run(cx),
        SlabPreset::SlabCompare => slab_compare::run::<K, V>(cx),
    }
}
