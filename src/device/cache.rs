//! The on-disk kernel cache: CUBINs keyed by (source hash, options, arch, NVRTC version), so that
//! only the first run on a machine pays for NVRTC. Directory: `$WARPMAP_CACHE_DIR`, else
//! `$XDG_CACHE_HOME/warpmap/kernels`, else `$HOME/.cache/warpmap/kernels`. Set
//! `WARPMAP_CACHE_DIR=off` to disable it.
//!
//! A cache file starts with its full key on one line, checked on load, so a hash collision can
//! only cost a recompile, never a wrong module.

use std::path::PathBuf;

/// FNV-1a, 64-bit: stable across Rust versions (unlike `DefaultHasher`), good enough for a key.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The cache directory, or `None` when disabled or no home is known.
pub fn dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("WARPMAP_CACHE_DIR") {
        if d == "off" {
            return None;
        }
        return Some(PathBuf::from(d));
    }
    if let Some(x) = std::env::var_os("XDG_CACHE_HOME") {
        return Some(PathBuf::from(x).join("warpmap/kernels"));
    }
    std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/warpmap/kernels"))
}

/// The full cache key of one compile.
pub fn key(source: &str, options: &[String], arch: u32, nvrtc: (i32, i32)) -> String {
    format!(
        "warpmap-cubin v1 src={:016x} len={} arch=sm_{arch} nvrtc={}.{} opts={}",
        fnv1a64(source.as_bytes()),
        source.len(),
        nvrtc.0,
        nvrtc.1,
        options.join(" ")
    )
}

fn path_for(key: &str) -> Option<PathBuf> {
    dir().map(|d| d.join(format!("{:016x}.cubin", fnv1a64(key.as_bytes()))))
}

/// The cached CUBIN for `key`, if present and intact.
pub fn load(key: &str) -> Option<Vec<u8>> {
    let bytes = std::fs::read(path_for(key)?).ok()?;
    let nl = bytes.iter().position(|&b| b == b'\n')?;
    (&bytes[..nl] == key.as_bytes()).then(|| bytes[nl + 1..].to_vec())
}

/// Stores a CUBIN (best effort: a read-only cache directory only costs recompiles).
pub fn store(key: &str, cubin: &[u8]) {
    let Some(path) = path_for(key) else { return };
    if let Some(parent) = path.parent() {
        if std::fs::create_dir_all(parent).is_err() {
            return;
        }
    }
    let mut data = Vec::with_capacity(key.len() + 1 + cubin.len());
    data.extend_from_slice(key.as_bytes());
    data.push(b'\n');
    data.extend_from_slice(cubin);
    // Write then rename, so a concurrent reader never sees half a file.
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    if std::fs::write(&tmp, &data).is_ok() {
        let _ = std::fs::rename(&tmp, &path);
    }
}
