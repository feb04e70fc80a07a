//! The slab hash's benchmark presets (`warpmap bench --scheme slab`) on the GPU at tiny sizes:
//! every cell runs, verifies, and reports the memory utilisation it was asked for. Without a
//! GPU every case is skipped (see the library's `tests/common/mod.rs`).

#[path = "../../../tests/common/mod.rs"]
mod common;

use common::*;
use warpmap_bench::experiments::slab_report::{SlabOp, TARGETS};
use warpmap_bench::{run_slab, SlabBenchConfig, SlabPreset, SlabReport};

/// `preset` at tiny sizes, without the roofline, one run.
fn tiny(preset: SlabPreset, f: impl FnOnce(&mut SlabBenchConfig)) -> SlabReport {
    let mut c = SlabBenchConfig {
        quick: true,
        runs: Some(1),
        commit: "test".into(),
        roofline: false,
        sizes_log2: Some(vec![12]),
        ..SlabBenchConfig::new(preset)
    };
    f(&mut c);
    let r = run_slab(&c, &mut |_| {}).unwrap_or_else(|e| panic!("{preset}: {e}"));
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

fn close(row_u: Option<f64>, target: f64, tol: f64) -> bool {
    row_u.is_some_and(|u| (u - target).abs() <= tol)
}

#[test]
fn fig4_cells_reach_their_utilisation() {
    if gpu().is_none() {
        return;
    }
    let r = tiny(SlabPreset::SlabFig4, |c| {
        c.utilizations = Some(vec![0.3, 0.8])
    });
    assert_eq!(r.rows.len(), 2 * 3);
    for row in &r.rows {
        let t = row.utilization_target.unwrap();
        assert!(close(row.utilization, t, 0.05), "{row:?}");
        assert!(row.slab.is_some_and(|s| s.stats.pairs == 4096));
    }
    let ops: Vec<SlabOp> = r.rows.iter().map(|x| x.op).collect();
    assert_eq!(
        &ops[..3],
        &[SlabOp::Build, SlabOp::SearchHit, SlabOp::SearchMiss]
    );
}

#[test]
fn fig5_sizes() {
    if gpu().is_none() {
        return;
    }
    let r = tiny(SlabPreset::SlabFig5, |c| c.sizes_log2 = Some(vec![10, 12]));
    assert_eq!(r.rows.len(), 2 * 3);
    assert_eq!(r.rows[0].n, 1024);
    assert_eq!(r.rows[5].n, 4096);
}

#[test]
fn fig6_incremental_and_rebuilds() {
    if gpu().is_none() {
        return;
    }
    let r = tiny(SlabPreset::SlabFig6, |c| c.batch_log2 = Some(vec![8, 9]));
    assert_eq!(r.rows.len(), 4);
    let slab = &r.rows[0];
    assert_eq!(
        (slab.op, slab.batches, slab.cumulative_ms.len()),
        (SlabOp::Incremental, Some(16), 16)
    );
    assert!(slab.speedup.is_some());
    let wd = &r.rows[1];
    assert_eq!(
        (wd.op, wd.scheme, wd.cumulative_ms.len()),
        (SlabOp::Rebuild, "warpdrive", 16)
    );
    assert!(close(wd.load_factor, 0.65, 0.02), "{wd:?}");
}

#[test]
fn fig7_concurrent_mixes() {
    if gpu().is_none() {
        return;
    }
    let r = tiny(SlabPreset::SlabFig7, |c| {
        c.utilizations = Some(vec![0.5]);
        c.batch_log2 = Some(vec![10]);
    });
    let mixes: Vec<&str> = r.rows.iter().map(|x| x.mix.unwrap().name).collect();
    assert_eq!(mixes, ["G0", "G1", "G2"]);
    for row in &r.rows {
        assert_eq!(
            (row.op, row.batch, row.n),
            (SlabOp::Concurrent, Some(1024), 4096)
        );
        assert!(close(row.utilization, 0.5, 0.05), "{row:?}");
        assert!(row.utilization_end.is_some());
    }
}

#[test]
fn alloc_rate_rows() {
    if gpu().is_none() {
        return;
    }
    let r = tiny(SlabPreset::SlabAlloc, |c| c.runs = Some(2));
    let ops: Vec<SlabOp> = r.rows.iter().map(|x| x.op).collect();
    assert_eq!(ops, [SlabOp::Alloc, SlabOp::Free]);
    assert!(r.rows[0].pool_fill.is_some_and(|f| f > 0.0 && f <= 0.2));
}

#[test]
fn compare_has_every_target_cell() {
    if gpu().is_none() {
        return;
    }
    let r = tiny(SlabPreset::SlabCompare, |c| c.batch_log2 = Some(vec![10]));
    assert_eq!(r.rows.len(), 6);
    assert_eq!(r.targets.len(), TARGETS.len());
    for (t, want) in r.targets.iter().zip(TARGETS) {
        assert_eq!(t.cell, want.cell);
        assert!(t.verified);
        assert!((t.ratio_to_slabhash - t.gops / want.slabhash_gops).abs() < 1e-12);
    }
    let incr = r.rows.iter().find(|x| x.op == SlabOp::Incremental).unwrap();
    assert_eq!(incr.batches, Some(128));
}
