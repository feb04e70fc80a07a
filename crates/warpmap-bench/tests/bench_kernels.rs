//! The kernels only the benchmark needs compile under NVRTC (needs NVRTC, no GPU;
//! `scripts/test` installs it; without it these tests fail and say what to install):
//! - its own modules, [`ROOFLINE`] and [`WORKLOAD`], for sm_80 (A100) and sm_90 (H100/H200),
//!   each CUBIN exporting every kernel the benchmark loads;
//! - the Stadium specialisations of the benchmark's key/value types (the fig19 preset's sizes,
//!   [`KvType::EVERY`]) for sm_90 (the H100 the presets run on), for 1- and 8-bit tickets and
//!   both bucket locations, with the mixed-batch kernel the fig15 preset launches. The
//!   library's `tests/kernels_compile.rs` covers the library's own list; this covers the widths
//!   only the benchmark asks for.

use warpmap::kernels::KernelSource;
use warpmap::table::stadium::{kernel_source, Location};
use warpmap_bench::kernels::{
    roofline_source, workload_source, ROOFLINE, ROOFLINE_KERNELS, WORKLOAD, WORKLOAD_KERNELS,
};
use warpmap_bench::KvType;

fn require_nvrtc() {
    if let Err(e) = warpmap::device::nvrtc() {
        panic!("NVRTC is required (run `scripts/test`, which installs it):\n{e}");
    }
}

/// Compiles `src` for `arch`; the CUBIN must be an ELF file that exports every name of `kernels`.
fn compile_exporting(src: &KernelSource, arch: u32, kernels: &[&str]) -> Result<(), String> {
    let cubin = warpmap::device::compile_cubin(&src.text(), src.module, arch, &src.options())
        .map_err(|e| e.to_string())?;
    if !cubin.starts_with(b"\x7fELF") {
        return Err(format!("{} bytes that are not an ELF file", cubin.len()));
    }
    let missing: Vec<&str> = kernels
        .iter()
        .copied()
        .filter(|k| {
            !cubin
                .windows(k.len() + 1)
                .any(|w| w == [k.as_bytes(), b"\0"].concat())
        })
        .collect();
    match missing.is_empty() {
        true => Ok(()),
        false => Err(format!("the CUBIN lacks {missing:?}")),
    }
}

#[test]
fn bench_modules_compile_for_sm80_and_sm90() {
    require_nvrtc();
    let modules = [
        (roofline_source(), &ROOFLINE_KERNELS[..]),
        (workload_source(), &WORKLOAD_KERNELS[..]),
    ];
    let mut failures = Vec::new();
    for (src, kernels) in &modules {
        for arch in [80, 90] {
            if let Err(e) = compile_exporting(src, arch, kernels) {
                failures.push(format!("{} for sm_{arch}: {e}", src.label()));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The lists of kernel names are what the files declare.
#[test]
fn bench_kernel_files_declare_their_kernels() {
    for (file, kernels) in [
        (ROOFLINE, &ROOFLINE_KERNELS[..]),
        (WORKLOAD, &WORKLOAD_KERNELS[..]),
    ] {
        let declared = file
            .text
            .lines()
            .filter(|l| l.starts_with("extern \"C\" __global__"))
            .count();
        assert_eq!(declared, kernels.len(), "{}", file.path);
        for k in kernels {
            assert!(
                file.text.contains(&format!(" {k}(")),
                "{} lacks {k}",
                file.path
            );
        }
    }
}

#[test]
fn bench_type_specialisations_compile_for_sm90() {
    require_nvrtc();
    let mut failures = Vec::new();
    let mut compiled = 0;
    for t in KvType::EVERY {
        for ticket_bits in [1, 8] {
            for location in [Location::Device, Location::Host] {
                let src = kernel_source(
                    t.key_bytes(),
                    t.value_bytes(),
                    ticket_bits,
                    location,
                    Default::default(),
                );
                match compile_exporting(&src, 90, &["stadium_mixed"]) {
                    Ok(()) => compiled += 1,
                    Err(e) => failures.push(format!("{}: {e}", src.label())),
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(compiled, KvType::EVERY.len() * 4);
}
