//! DyCuckoo's benchmark presets (`warpmap bench --scheme dycuckoo`) on the GPU at tiny sizes:
//! every cell runs and verifies, the static cells count the keys not placed, the dynamic
//! workload grows and shrinks and its baseline runs. Without a GPU every case is skipped (see
//! the library's `tests/common/mod.rs`).

#[path = "../../../tests/common/mod.rs"]
mod common;

use common::*;
use warpmap_bench::experiments::dycuckoo_report::{DcOp, DC_TARGETS};
use warpmap_bench::{run_dycuckoo, DyCuckooBenchConfig, DyCuckooPreset, DyCuckooReport};

/// `preset` at tiny sizes, one run.
fn tiny(preset: DyCuckooPreset, f: impl FnOnce(&mut DyCuckooBenchConfig)) -> DyCuckooReport {
    let mut c = DyCuckooBenchConfig {
        quick: true,
        runs: Some(1),
        commit: "test".into(),
        size_log2: Some(12),
        batch_log2: Some(10),
        batches: Some(6),
        ..DyCuckooBenchConfig::new(preset)
    };
    f(&mut c);
    let r = run_dycuckoo(&c, &mut |_| {}).unwrap_or_else(|e| panic!("{preset}: {e}"));
    for row in &r.rows {
        assert!(row.verified, "{preset}: {row:?}");
        assert!(row.gops > 0.0 && row.runs > 0, "{preset}: {row:?}");
    }
    assert!(r.all_verified());
    assert_eq!(r.preset, preset);
    assert!(r.device.contains("sm_"));
    serde_json::to_string(&r).unwrap();
    r
}

#[test]
fn static_cells_count_unplaced_keys() {
    if gpu().is_none() {
        return;
    }
    let r = tiny(DyCuckooPreset::DycuckooStatic, |c| {
        c.fills = Some(vec![0.5, 0.95])
    });
    assert_eq!(r.rows.len(), 2 * 4);
    let ops: Vec<DcOp> = r.rows[..4].iter().map(|x| x.op).collect();
    assert_eq!(
        ops,
        [DcOp::Build, DcOp::FindHit, DcOp::FindMiss, DcOp::Erase]
    );
    for row in &r.rows {
        let (f, m) = (row.fill.unwrap(), row.fill_measured.unwrap());
        // The keys not placed lower the fill; nothing else.
        assert!(m <= f + 1e-9 && m > f - 0.05, "{row:?}");
    }
    assert!(r.rows[0].unplaced.is_some() && r.rows[1].unplaced.is_none());
}

#[test]
fn dynamic_grows_shrinks_and_has_a_baseline() {
    if gpu().is_none() {
        return;
    }
    let r = tiny(DyCuckooPreset::DycuckooDynamic, |_| {});
    // insert, find, erase, all: DyCuckoo's and WarpDrive's.
    assert_eq!(r.rows.len(), 8);
    assert!(r.rows.iter().any(|x| x.scheme == "warpdrive"));
    let all = r
        .rows
        .iter()
        .find(|x| x.scheme == "dycuckoo" && x.op == DcOp::All)
        .unwrap();
    assert!(all.speedup.is_some() && all.resizes.is_some_and(|n| n > 0));
    let trace = &r.dynamic[0].points;
    assert_eq!(trace.len(), 12);
    let peak = trace.iter().map(|p| p.memory_bytes).max().unwrap();
    assert!(
        trace.last().unwrap().memory_bytes < peak,
        "the replay shrinks the table"
    );
    assert!(trace.iter().all(|p| p.baseline_ms.is_some()));
}

#[test]
fn compare_has_every_target_cell() {
    if gpu().is_none() {
        return;
    }
    let r = tiny(DyCuckooPreset::DycuckooCompare, |_| {});
    assert_eq!(r.targets.len(), DC_TARGETS.len());
    for (t, want) in r.targets.iter().zip(DC_TARGETS) {
        assert_eq!(t.cell, want.cell);
        assert!(t.verified);
    }
}

#[test]
fn sweep_runs_every_point() {
    if gpu().is_none() {
        return;
    }
    let r = tiny(DyCuckooPreset::DycuckooSweep, |c| c.batches = Some(4));
    let points = r.plan.sweep.len();
    assert!(points >= 12, "{points} points");
    // insert, find, erase, all per point; no baseline.
    assert_eq!(r.rows.len(), 4 * points);
    assert!(r.rows.iter().all(|x| x.scheme == "dycuckoo"));
    let labels: std::collections::BTreeSet<_> =
        r.rows.iter().map(|x| x.sweep.clone().unwrap()).collect();
    assert_eq!(labels.len(), points);
    // The α points ran with their α.
    let a = r
        .rows
        .iter()
        .find(|x| x.sweep.as_deref() == Some("alpha 0.2"))
        .unwrap();
    assert_eq!((a.alpha, a.beta), (Some(0.2), Some(0.9)));
}
