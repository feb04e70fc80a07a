//! The bulk-operation experiment: every bulk operation (insert, find_hit, find_half, find_miss,
//! contains, erase) of each table variant at each load factor, timed alone and verified in
//! every run. The presets `fig7` and `fig8` (the WarpDrive paper's Figs. 7 and 8), `compare`,
//! `stadium` (the Stadium paper's Figs. 14, 16 and 17) and `fig19` (its Fig. 19) are all this
//! loop over different plans ([`Preset`](crate::plan::Preset)); the charts differ, not the
//! measurement.
//!
//! On a GPU (`gpu.rs`): the roofline first, then the plan's scheme through device buffers, each
//! kernel between CUDA events. On the CPU backend (`cpu.rs`): `CpuTable` through host slices,
//! each call between [`Instant`](std::time::Instant)s.

pub(crate) mod cpu;
pub(crate) mod gpu;
