//! The benchmark's own kernels, embedded like the library's (`warpmap::kernels`): each is
//! assembled after the library's shared headers ([`warpmap::kernels::COMMON`]) by
//! [`KernelSource`], so it may use their types and hashes (`u64`, `wm_fmix64`).

use warpmap::kernels::{KernelFile, KernelSource};

/// A file of this crate's `kernels/`, named by its path from the repository root.
macro_rules! bench_kernel_file {
    ($p:literal) => {
        KernelFile {
            path: concat!("crates/warpmap-bench/kernels/", $p),
            text: include_str!(concat!("../kernels/", $p)),
        }
    };
}

/// Measurement kernels: the in-run roofline of `warpmap bench` and the out-of-core bound
/// ([`harness::roofline`](crate::harness::roofline)).
pub const ROOFLINE: KernelFile = bench_kernel_file!("roofline.cu");

/// The kernels [`harness::roofline`](crate::harness::roofline) loads from [`ROOFLINE`].
pub const ROOFLINE_KERNELS: [&str; 5] = [
    "roofline_gather8",
    "roofline_cas8",
    "roofline_copy",
    "roofline_write_records",
    "roofline_read_records",
];

/// Device-side workloads (keys, values, verification) of `warpmap outofcore`
/// ([`stadium_outofcore`](crate::experiments::stadium_outofcore)), and the range copy of the
/// slab benchmark's rebuilds ([`slab_fig6`](crate::experiments::slab_fig6)).
pub const WORKLOAD: KernelFile = bench_kernel_file!("workload.cu");

/// The kernels [`stadium_outofcore`](crate::experiments::stadium_outofcore) and
/// [`slab_fig6`](crate::experiments::slab_fig6) load from [`WORKLOAD`].
pub const WORKLOAD_KERNELS: [&str; 5] = [
    "wl_keys_seq",
    "wl_keys_sampled",
    "wl_values",
    "wl_verify",
    "wl_copy_words",
];

/// The roofline module.
pub fn roofline_source() -> KernelSource {
    KernelSource::new("roofline", ROOFLINE)
}

/// The workload module.
pub fn workload_source() -> KernelSource {
    KernelSource::new("workload", WORKLOAD)
}
