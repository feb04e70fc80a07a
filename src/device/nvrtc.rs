//! NVRTC: finding the library without environment variables, and compiling kernel sources to
//! CUBIN for one exact `sm_XY`.
//!
//! cudarc opens `libnvrtc` by bare name, which needs `LD_LIBRARY_PATH` for a pip or toolkit
//! install outside the loader's path. So we look in the usual places first and open
//! `libnvrtc-builtins` and then `libnvrtc` by absolute path (`RTLD_GLOBAL`); the later bare-name
//! opens (cudarc's, and libnvrtc's own of its builtins) then find the loaded libraries by soname.

use crate::{Error, Result};
use cudarc::nvrtc::{result as nvrtc_result, sys as nvrtc_sys};
use std::ffi::{CStr, CString};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// What to install when NVRTC is missing.
pub const NVRTC_REMEDY: &str = "install the CUDA 13 toolkit (or just NVRTC: `pip install \
nvidia-cuda-nvrtc==13.0.88`, or this repository's `scripts/install-nvrtc.sh`), or point CUDA_HOME \
at a CUDA install; NVRTC 13.0 is what a CUDA 13.0 driver accepts";

/// The loaded NVRTC library.
#[derive(Debug)]
pub struct Nvrtc {
    /// The directory it was loaded from (`None`: found by the system loader by name).
    pub dir: Option<PathBuf>,
    /// `(major, minor)` as NVRTC reports it.
    pub version: (i32, i32),
    // Kept open for the life of the process.
    _libs: Vec<libloading::os::unix::Library>,
}

/// The directories searched for `libnvrtc.so.13`, in order.
pub fn search_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    let push_cuda_root = |root: &Path, dirs: &mut Vec<PathBuf>| {
        dirs.push(root.join("lib64"));
        dirs.push(root.join("lib"));
        dirs.push(root.join("targets/x86_64-linux/lib"));
    };
    for var in ["WARPMAP_NVRTC_DIR"] {
        if let Some(v) = std::env::var_os(var) {
            dirs.push(PathBuf::from(v));
        }
    }
    for var in ["CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"] {
        if let Some(v) = std::env::var_os(var) {
            push_cuda_root(Path::new(&v), &mut dirs);
        }
    }
    // This repository's own pinned install (scripts/install-nvrtc.sh), found relative to the
    // working directory and to the crate's source (tests and `cargo run`).
    for base in [Path::new("."), Path::new(env!("CARGO_MANIFEST_DIR"))] {
        dirs.push(base.join(".nvrtc/site/nvidia/cu13/lib"));
    }
    push_cuda_root(Path::new("/usr/local/cuda"), &mut dirs);
    push_cuda_root(Path::new("/usr/local/cuda-13.0"), &mut dirs);
    push_cuda_root(Path::new("/opt/cuda"), &mut dirs);
    dirs.push(PathBuf::from("/usr/lib/x86_64-linux-gnu"));
    dirs.push(PathBuf::from("/usr/lib64"));
    // pip installs: nvidia/cu13/lib under any site-packages we can see.
    for sp in python_site_packages() {
        dirs.push(sp.join("nvidia/cu13/lib"));
    }
    dirs
}

/// The `site-packages` / `dist-packages` directories of the Pythons we can see without running
/// one: `$VIRTUAL_ENV`, `$CONDA_PREFIX`, `~/.local`, pyenv versions, the prefix of every
/// `python3` on `PATH`, `/opt/conda`, `/usr/local` and `/usr`. Where pip puts NVIDIA's
/// libraries (`nvidia/cu13/lib` for NVRTC, `nvidia/nccl/lib` for NCCL).
pub(crate) fn python_site_packages() -> Vec<PathBuf> {
    let mut site_roots: Vec<PathBuf> = Vec::new();
    for var in ["VIRTUAL_ENV", "CONDA_PREFIX"] {
        if let Some(v) = std::env::var_os(var) {
            site_roots.push(PathBuf::from(v).join("lib"));
        }
    }
    if let Some(home) = std::env::var_os("HOME") {
        let home = PathBuf::from(home);
        site_roots.push(home.join(".local/lib"));
        if let Ok(rd) = std::fs::read_dir(home.join(".pyenv/versions")) {
            site_roots.extend(rd.flatten().map(|e| e.path().join("lib")));
        }
    }
    if let Some(path) = std::env::var_os("PATH") {
        for bin in std::env::split_paths(&path) {
            if bin.join("python3").is_file() {
                if let Some(prefix) = bin.parent() {
                    site_roots.push(prefix.join("lib"));
                }
            }
        }
    }
    site_roots.push(PathBuf::from("/opt/conda/lib"));
    site_roots.push(PathBuf::from("/usr/local/lib"));
    site_roots.push(PathBuf::from("/usr/lib"));
    let mut out: Vec<PathBuf> = Vec::new();
    for root in site_roots {
        if let Ok(rd) = std::fs::read_dir(&root) {
            let mut pys: Vec<PathBuf> = rd
                .flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("python3"))
                })
                .collect();
            pys.sort();
            for py in pys {
                for sp in ["site-packages", "dist-packages"] {
                    let d = py.join(sp);
                    if !out.contains(&d) {
                        out.push(d);
                    }
                }
            }
        }
    }
    out
}

fn open_global(path: &Path) -> std::result::Result<libloading::os::unix::Library, String> {
    use libloading::os::unix::{Library, RTLD_GLOBAL, RTLD_NOW};
    // SAFETY: loading NVIDIA's NVRTC libraries runs their initialisers, which have no
    // preconditions; we keep the handles open for the life of the process.
    unsafe { Library::open(Some(path), RTLD_NOW | RTLD_GLOBAL) }.map_err(|e| e.to_string())
}

fn find_builtins(dir: &Path) -> Option<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("libnvrtc-builtins.so.13"))
        })
        .collect();
    found.sort();
    found.into_iter().next()
}

/// Loads NVRTC from the first of `dirs` that holds `libnvrtc.so.13`, else (when
/// `system_fallback`) from the system loader's path. [`Error::NvrtcMissing`] names every place
/// searched and the remedy.
pub fn load_from(dirs: &[PathBuf], system_fallback: bool) -> Result<Nvrtc> {
    let mut libs = Vec::new();
    let mut loaded_dir = None;
    let mut problems = Vec::new();
    for dir in dirs {
        let lib = dir.join("libnvrtc.so.13");
        if !lib.is_file() {
            continue;
        }
        if let Some(b) = find_builtins(dir) {
            match open_global(&b) {
                Ok(l) => libs.push(l),
                Err(e) => problems.push(format!("{}: {e}", b.display())),
            }
        }
        match open_global(&lib) {
            Ok(l) => {
                libs.push(l);
                loaded_dir = Some(dir.clone());
                break;
            }
            Err(e) => problems.push(format!("{}: {e}", lib.display())),
        }
    }
    if loaded_dir.is_none() {
        // Last resort: the system loader's own path (ldconfig, LD_LIBRARY_PATH).
        let system = if system_fallback {
            open_global(Path::new("libnvrtc.so.13"))
        } else {
            Err("not tried".into())
        };
        match system {
            Ok(l) => libs.push(l),
            Err(_) => {
                let mut searched: Vec<String> =
                    dirs.iter().map(|d| d.display().to_string()).collect();
                searched.dedup();
                if system_fallback {
                    searched.push("the system loader's path".into());
                }
                let mut s = format!("looked for libnvrtc.so.13 in {}", searched.join(", "));
                if !problems.is_empty() {
                    s.push_str(&format!("; failed to open: {}", problems.join("; ")));
                }
                return Err(Error::NvrtcMissing {
                    searched: s,
                    remedy: NVRTC_REMEDY.into(),
                });
            }
        }
    }
    let (mut major, mut minor) = (0, 0);
    // SAFETY: libnvrtc.so.13 is loaded (above), so cudarc's bare-name lookup resolves to it by
    // soname; nvrtcVersion only writes the two ints we pass.
    let rc = unsafe { nvrtc_sys::nvrtcVersion(&mut major, &mut minor) };
    if rc != nvrtc_sys::nvrtcResult::NVRTC_SUCCESS {
        return Err(Error::NvrtcMissing {
            searched: format!("libnvrtc loaded but nvrtcVersion failed: {rc:?}"),
            remedy: NVRTC_REMEDY.into(),
        });
    }
    Ok(Nvrtc {
        dir: loaded_dir,
        version: (major, minor),
        _libs: libs,
    })
}

/// Finds and loads NVRTC once per process.
pub fn nvrtc() -> Result<&'static Nvrtc> {
    static NVRTC: OnceLock<std::result::Result<Nvrtc, String>> = OnceLock::new();
    let loaded = NVRTC.get_or_init(|| {
        load_from(&search_dirs(), true).map_err(|e| match e {
            Error::NvrtcMissing { searched, .. } => searched,
            other => other.to_string(),
        })
    });
    match loaded {
        Ok(n) => Ok(n),
        Err(msg) => Err(Error::NvrtcMissing {
            searched: msg.clone(),
            remedy: NVRTC_REMEDY.into(),
        }),
    }
}

/// Compiles a translation unit to CUBIN for `sm_{arch}` (e.g. 90) with extra options.
/// `name` is the program name NVRTC puts in messages.
pub fn compile_cubin(source: &str, name: &str, arch: u32, options: &[String]) -> Result<Vec<u8>> {
    nvrtc()?;
    let src = CString::new(source).map_err(|_| Error::invalid("kernel source contains NUL"))?;
    let cname = CString::new(name).map_err(|_| Error::invalid("kernel name contains NUL"))?;
    let mut opts = vec![
        format!("--gpu-architecture=sm_{arch}"),
        "--std=c++17".to_string(),
    ];
    opts.extend(options.iter().cloned());
    let prog = nvrtc_result::create_program(&src, Some(&cname)).map_err(|e| Error::Compile {
        module: name.into(),
        options: opts.join(" "),
        log: format!("nvrtcCreateProgram failed: {e:?}"),
    })?;
    // SAFETY: `prog` is a live program created above; it is destroyed exactly once below, and
    // the buffers passed to NVRTC are sized by NVRTC's own size queries.
    let result = unsafe {
        let compiled = nvrtc_result::compile_program(prog, &opts);
        let log = nvrtc_result::get_program_log(prog)
            .map(|raw| CStr::from_ptr(raw.as_ptr()).to_string_lossy().into_owned())
            .unwrap_or_default();
        match compiled {
            Err(e) => Err(Error::Compile {
                module: name.into(),
                options: opts.join(" "),
                log: format!("{e:?}\n{log}"),
            }),
            Ok(()) => {
                let mut size = 0usize;
                let mut cubin = Vec::new();
                let mut rc = nvrtc_sys::nvrtcGetCUBINSize(prog, &mut size);
                if rc == nvrtc_sys::nvrtcResult::NVRTC_SUCCESS {
                    cubin = vec![0u8; size];
                    rc = nvrtc_sys::nvrtcGetCUBIN(prog, cubin.as_mut_ptr().cast());
                }
                if rc != nvrtc_sys::nvrtcResult::NVRTC_SUCCESS || size == 0 {
                    Err(Error::Compile {
                        module: name.into(),
                        options: opts.join(" "),
                        log: format!("nvrtcGetCUBIN failed: {rc:?}\n{log}"),
                    })
                } else {
                    Ok(cubin)
                }
            }
        }
    };
    // SAFETY: see above; `prog` is not used after this.
    let _ = unsafe { nvrtc_result::destroy_program(prog) };
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_nvrtc_names_the_remedy() {
        let empty = std::env::temp_dir().join("warpmap-no-nvrtc-here");
        let err = load_from(std::slice::from_ref(&empty), false).unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, Error::NvrtcMissing { .. }), "{msg}");
        assert!(msg.contains(&empty.display().to_string()), "{msg}");
        assert!(
            msg.contains("pip install nvidia-cuda-nvrtc==13.0.88"),
            "{msg}"
        );
    }
}
