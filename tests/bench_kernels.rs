//! The Stadium kernel specialisations the benchmark's key/value types need (the fig19 preset's
//! sizes, [`KvType::EVERY`]) compile under NVRTC for sm_90 (the H100 the presets run on), for
//! 1- and 8-bit tickets and both bucket locations, with the mixed-batch kernel the fig15 preset
//! launches. `tests/kernels_compile.rs` covers the library's own list; this covers the widths
//! only the benchmark asks for. Needs NVRTC (`scripts/test` installs it), no GPU.

use warpmap::bench::KvType;
use warpmap::table::stadium::{kernel_source, Location};

#[test]
fn bench_type_specialisations_compile_for_sm90() {
    if let Err(e) = warpmap::device::nvrtc() {
        panic!("NVRTC is required (run `scripts/test`, which installs it):\n{e}");
    }
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
                if !src.text().contains("stadium_mixed") {
                    failures.push(format!("{}: no stadium_mixed kernel", src.label()));
                }
                match warpmap::device::compile_cubin(&src.text(), src.module, 90, &src.options()) {
                    Ok(cubin) if cubin.len() > 64 => compiled += 1,
                    Ok(cubin) => failures.push(format!("{}: {} bytes", src.label(), cubin.len())),
                    Err(e) => failures.push(format!("{}: {e}", src.label())),
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(compiled, KvType::EVERY.len() * 4);
}
