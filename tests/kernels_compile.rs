//! Every kernel specialisation compiles under NVRTC, for sm_80 (A100) and sm_90 (H100/H200).
//!
//! Needs NVRTC but no GPU, so it runs in CI: `scripts/test` installs the pinned NVRTC 13.0 into
//! `.nvrtc/site` first. Without NVRTC these tests FAIL (they do not skip) and say what to install.
//!
//! Checked per module and arch: a non-empty CUBIN that is an ELF file for the CUDA machine, and
//! that exports every `extern "C" __global__` kernel its source declares (the names the host code
//! loads). Also: a broken source yields `Error::Compile` whose log points at the real
//! `kernels/<file>(<line>)`, and NVRTC reports version 13.x.

use warpmap::kernels::{KernelFile, KernelSource, COMMON};
use warpmap::Error;

/// The architectures we compile for: sm_80 (A100) and sm_90 (H100, H200).
const ARCHS: [u32; 2] = [80, 90];

/// ELF `e_machine` of CUDA device code.
const EM_CUDA: u16 = 190;

/// NVRTC must be present; if not, fail with the library's own message (it names the remedy).
fn require_nvrtc() -> &'static warpmap::device::Nvrtc {
    match warpmap::device::nvrtc() {
        Ok(n) => n,
        Err(e) => panic!(
            "NVRTC is required for the kernel compile tests (run `scripts/test`, which installs \
             it, or `scripts/install-nvrtc.sh`):\n{e}"
        ),
    }
}

/// Every module the library can ask NVRTC for (the benchmark's own kernels are compiled by
/// crates/warpmap-bench/tests/bench_kernels.rs). `WARPMAP_COMPILE_ONLY=<module>` keeps one
/// module's specialisations (a quicker check while editing one scheme's kernels), and
/// `WARPMAP_COMPILE_LABEL=<text>` those whose label (`NAME=value` defines, joined) contains the
/// text (one specialisation's registers in seconds: `WM_KEY_BYTES=8,WM_VALUE_BYTES=8,`).
fn all_sources() -> Vec<KernelSource> {
    let mut v: Vec<KernelSource> = warpmap::table::registry::schemes()
        .iter()
        .flat_map(|s| (s.kernel_sources)())
        .collect();
    v.extend(warpmap::table::engine::multisplit::all_kernel_sources());
    v.push(warpmap::ops::device::kernel_source());
    v.push(warpmap::table::engine::l2_sides::kernel_source());
    if let Ok(only) = std::env::var("WARPMAP_COMPILE_ONLY") {
        v.retain(|s| s.module == only.trim());
    }
    if let Ok(text) = std::env::var("WARPMAP_COMPILE_LABEL") {
        v.retain(|s| s.label().contains(text.trim()));
    }
    v
}

/// The `extern "C"` kernel names a source file declares.
fn declared_kernels(file: &KernelFile) -> Vec<String> {
    let mut names = Vec::new();
    for line in file.text.lines() {
        let line = line.trim_start();
        if !line.starts_with("extern \"C\"") || !line.contains("__global__") {
            continue;
        }
        // `__launch_bounds__(...)` may stand between the return type and the name.
        let line = match (line.find("__launch_bounds__("), line.find(") ")) {
            (Some(_), Some(close)) => &line[close + 2..],
            _ => line,
        };
        if let Some(open) = line.find('(') {
            if let Some(name) = line[..open].split_whitespace().last() {
                names.push(name.to_string());
            }
        }
    }
    names
}

/// What is wrong with a CUBIN, if anything.
fn check_cubin(cubin: &[u8], kernels: &[String]) -> Option<String> {
    if cubin.len() < 64 {
        return Some(format!("CUBIN of {} bytes is too short", cubin.len()));
    }
    if &cubin[..4] != b"\x7fELF" {
        return Some(format!(
            "CUBIN does not start with the ELF magic: {:02x?}",
            &cubin[..4]
        ));
    }
    if cubin[4] != 2 {
        return Some(format!("CUBIN is not a 64-bit ELF (class {})", cubin[4]));
    }
    let machine = u16::from_le_bytes([cubin[18], cubin[19]]);
    if machine != EM_CUDA {
        return Some(format!(
            "CUBIN e_machine is {machine}, not EM_CUDA ({EM_CUDA})"
        ));
    }
    let missing: Vec<&str> = kernels
        .iter()
        .filter(|k| {
            let mut sym = k.as_bytes().to_vec();
            sym.push(0);
            !cubin.windows(sym.len()).any(|w| w == sym.as_slice())
        })
        .map(|k| k.as_str())
        .collect();
    if !missing.is_empty() {
        return Some(format!("CUBIN lacks the kernels {missing:?}"));
    }
    None
}

/// `WARPMAP_COMPILE_DUMP=<dir>`: each CUBIN is also written there (`<label>.sm_<arch>.cubin`),
/// for reading its kernels' registers (`scripts/cubin-registers.py`).
fn dump_cubin(src: &KernelSource, arch: u32, cubin: &[u8]) {
    if let Some(dir) = std::env::var_os("WARPMAP_COMPILE_DUMP") {
        let name: String = src
            .label()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        let path = std::path::Path::new(&dir).join(format!("{name}.sm_{arch}.cubin"));
        std::fs::create_dir_all(&dir).expect("WARPMAP_COMPILE_DUMP: cannot make the directory");
        std::fs::write(&path, cubin).expect("WARPMAP_COMPILE_DUMP: cannot write");
    }
}

fn compile_all_for(arch: u32) {
    require_nvrtc();
    let sources = all_sources();
    assert!(!sources.is_empty(), "no kernel specialisations listed");
    // Compile on a few threads (NVRTC is thread-safe across programs); report every failure.
    let threads = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .min(4);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failures = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(src) = sources.get(i) else { break };
                let kernels = declared_kernels(&src.file);
                let problem = match warpmap::device::compile_cubin(
                    &src.text(),
                    src.module,
                    arch,
                    &src.options(),
                ) {
                    Err(e) => Some(e.to_string()),
                    Ok(cubin) => {
                        dump_cubin(src, arch, &cubin);
                        check_cubin(&cubin, &kernels)
                    }
                };
                if let Some(p) = problem {
                    failures
                        .lock()
                        .unwrap()
                        .push(format!("{} for sm_{arch}: {p}", src.label()));
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    assert!(
        failures.is_empty(),
        "{} of {} kernel modules failed for sm_{arch}:\n{}",
        failures.len(),
        sources.len(),
        failures.join("\n")
    );
}

#[test]
fn every_kernel_compiles_for_sm80() {
    compile_all_for(ARCHS[0]);
}

#[test]
fn every_kernel_compiles_for_sm90() {
    compile_all_for(ARCHS[1]);
}

#[test]
fn every_source_declares_kernels() {
    // Guards the symbol check above against a parser that finds nothing.
    for src in all_sources() {
        assert!(
            !declared_kernels(&src.file).is_empty(),
            "{} declares no extern \"C\" __global__ kernel",
            src.file.path
        );
    }
}

#[test]
fn nvrtc_is_version_13() {
    let nv = require_nvrtc();
    assert_eq!(
        nv.version.0, 13,
        "NVRTC {}.{} loaded from {:?}; warpmap needs 13.x (13.0 to match a CUDA 13.0 driver)",
        nv.version.0, nv.version.1, nv.dir
    );
}

#[test]
fn compile_errors_name_the_real_file_and_line() {
    require_nvrtc();
    // Assembled like KernelSource::text(): the common headers, then a scheme file with its own
    // #line marker. The error is on line 3 of the "file", after every common header, so this
    // also checks that the markers reset the line numbers.
    let mut text = String::new();
    for f in COMMON {
        text.push_str(&format!("#line 1 \"{}\"\n{}\n", f.path, f.text));
    }
    text.push_str("#line 1 \"kernels/broken.cu\"\n");
    text.push_str("// a deliberately broken kernel\n");
    text.push_str("extern \"C\" __global__ void broken(u64* out) {\n");
    text.push_str("  out[0] = this_name_does_not_exist;\n");
    text.push_str("}\n");
    let options = vec!["-DWM_BROKEN=1".to_string()];
    match warpmap::device::compile_cubin(&text, "broken", 90, &options) {
        Ok(cubin) => panic!("a broken kernel compiled ({} bytes)", cubin.len()),
        Err(Error::Compile {
            module,
            options,
            log,
        }) => {
            assert_eq!(module, "broken");
            assert!(
                options.contains("-DWM_BROKEN=1"),
                "options not reported: {options}"
            );
            assert!(options.contains("sm_90"), "arch not reported: {options}");
            // NVRTC writes `file(line): error: ...`.
            assert!(
                log.contains("kernels/broken.cu(3)") || log.contains("kernels/broken.cu:3"),
                "the log does not point at kernels/broken.cu line 3:\n{log}"
            );
            assert!(
                log.contains("this_name_does_not_exist"),
                "the log does not name the error:\n{log}"
            );
        }
        Err(other) => panic!("expected Error::Compile, got: {other}"),
    }
}

#[test]
fn compile_error_display_is_useful() {
    require_nvrtc();
    let src = "#line 1 \"kernels/oops.cu\"\nextern \"C\" __global__ void k() { int x = ; }\n";
    let err = warpmap::device::compile_cubin(src, "oops", 80, &[]).unwrap_err();
    let shown = err.to_string();
    assert!(shown.contains("oops"), "{shown}");
    assert!(shown.contains("kernels/oops.cu(1)"), "{shown}");
}
