//! `slab-compare`: the target cells on one GPU, `u32`->`u32`, every result verified: at
//! memory utilisation ~0.615 and n = 2^24, build, search hit, search miss and delete
//! (`bulk_cell` of [`super::slab_fig4_fig5`]); incremental insertion of 2^24 keys in 128
//! batches of 2^17 into a table sized for the final count at ~0.615
//! (`incremental_cell` of [`super::slab_fig6`], the rate over the whole
//! sequence); the concurrent Γ2 mix (0.1 insert, 0.1 delete, 0.4 hit, 0.4 miss) in batches of
//! 2^20 operations from n0 = 2^24 (`concurrent_cell` of [`super::slab_fig7`]).
//! The report then sets each cell beside its target and SlabHash's figure
//! ([`TARGETS`](super::slab_report::TARGETS)).

use super::slab_fig4_fig5::bulk_cell;
use super::slab_fig6::incremental_cell;
use super::slab_fig7::concurrent_cell;
use super::slab_run::SlabCx;
use warpmap::{Key, Result, Value};

/// The three cells.
pub(crate) fn run<K: Key, V: Value>(cx: &mut SlabCx<'_>) -> Result<()> {
    let plan = cx.plan;
    let n = plan.sizes()[0];
    let u = plan.utilizations[0];
    bulk_cell::<K, V>(cx, "compare", n, u, 0)?;
    let incr = plan.incremental_log2.unwrap_or(17);
    incremental_cell::<K, V>(cx, "compare", n, incr, u, 1, None)?;
    for (i, &mix) in plan.mixes.iter().enumerate() {
        concurrent_cell::<K, V>(cx, "compare", n, u, mix, 2 + i)?;
    }
    Ok(())
}
