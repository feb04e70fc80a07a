//! Kernel sources, embedded in the crate, and their assembly into one NVRTC translation unit.
//!
//! A module is the shared headers of `kernels/common/` followed by one scheme file, joined with
//! `#line` markers so NVRTC's messages name the real `kernels/<file>:<line>`. Kernels include
//! nothing else (no CUDA headers), which keeps a compile at tens of milliseconds.
//! Specialisation is by `-D` defines (key/value width, group size, ...).

/// One embedded source file. Crates beside the library embed their own kernels the same way
/// (a `KernelFile` of `include_str!` text, assembled after [`COMMON`] by [`KernelSource`]; the
/// benchmark's roofline is one).
#[derive(Clone, Copy, Debug)]
pub struct KernelFile {
    /// Path relative to the repository root, as NVRTC messages will show it.
    pub path: &'static str,
    /// The file's text.
    pub text: &'static str,
}

macro_rules! kernel_file {
    ($p:literal) => {
        KernelFile {
            path: concat!("kernels/", $p),
            text: include_str!(concat!("../kernels/", $p)),
        }
    };
}

/// The shared device code, in include order.
pub const COMMON: &[KernelFile] = &[
    kernel_file!("common/status.cuh"),
    kernel_file!("common/types.cuh"),
    kernel_file!("common/hash.cuh"),
    kernel_file!("common/warp.cuh"),
    kernel_file!("common/atomic.cuh"),
    kernel_file!("common/cache.cuh"),
    kernel_file!("common/stage.cuh"),
    kernel_file!("common/record.cuh"),
    kernel_file!("common/probe.cuh"),
    kernel_file!("common/apply.cuh"),
    kernel_file!("common/side.cuh"),
    kernel_file!("common/bulk.cuh"),
    kernel_file!("common/multisplit.cuh"),
];

/// The WarpDrive scheme's kernels.
pub const WARPDRIVE: KernelFile = kernel_file!("warpdrive.cu");
/// The Stadium hashing scheme's kernels.
pub const STADIUM: KernelFile = kernel_file!("stadium.cu");
/// The slab hash's kernels.
pub const SLAB: KernelFile = kernel_file!("slab.cu");
/// DyCuckoo's kernels.
pub const DYCUCKOO: KernelFile = kernel_file!("dycuckoo.cu");
/// The two-level cuckoo table's kernels.
pub const TWO_LEVEL: KernelFile = kernel_file!("two_level.cu");
/// The multisplit pass (partition a batch by a hash into parts; `table::engine::multisplit`).
pub const MULTISPLIT: KernelFile = kernel_file!("multisplit.cu");
/// The sharded table's stable split into shards and its inverse (`sharded::split`).
pub const SHARDED: KernelFile = kernel_file!("sharded.cu");
/// The relational operators' own device steps (`ops::device`).
pub const OPS: KernelFile = kernel_file!("ops.cu");

/// One specialisation of one module: what NVRTC compiles.
#[derive(Clone, Debug)]
pub struct KernelSource {
    /// The module's name (the scheme's).
    pub module: &'static str,
    /// The scheme file (after [`COMMON`]).
    pub file: KernelFile,
    /// `-D` defines, in order.
    pub defines: Vec<(String, String)>,
}

impl KernelSource {
    /// A module of `file` with no defines yet.
    pub fn new(module: &'static str, file: KernelFile) -> Self {
        KernelSource {
            module,
            file,
            defines: Vec::new(),
        }
    }

    /// Adds a `-Dname=value`.
    pub fn define(mut self, name: &str, value: impl ToString) -> Self {
        self.defines.push((name.to_string(), value.to_string()));
        self
    }

    /// The assembled translation unit.
    ///
    /// For kernel development only: when `WARPMAP_KERNEL_DIR` names a directory, a file there at
    /// a kernel's path (e.g. `$WARPMAP_KERNEL_DIR/kernels/slab.cu`) replaces the embedded text,
    /// so that variants of a kernel can be compared on a device with one build of the host code
    /// (the kernel cache keys on the text, so each variant is compiled once). A file that cannot
    /// be read leaves the embedded text in place. A process reads the directory's files once per
    /// module specialisation (`Gpu::module` keeps what it loaded, keyed by the directory), so edit
    /// them between runs.
    pub fn text(&self) -> String {
        let dir = std::env::var_os("WARPMAP_KERNEL_DIR").map(std::path::PathBuf::from);
        let mut s = String::new();
        for f in COMMON.iter().chain(std::iter::once(&self.file)) {
            s.push_str(&format!("#line 1 \"{}\"\n", f.path));
            match dir
                .as_ref()
                .and_then(|d| std::fs::read_to_string(d.join(f.path)).ok())
            {
                Some(text) => s.push_str(&text),
                None => s.push_str(f.text),
            }
            s.push('\n');
        }
        s
    }

    /// The NVRTC options for the defines.
    pub fn options(&self) -> Vec<String> {
        self.defines
            .iter()
            .map(|(n, v)| format!("-D{n}={v}"))
            .collect()
    }

    /// A readable name: module plus defines.
    pub fn label(&self) -> String {
        let d: Vec<String> = self
            .defines
            .iter()
            .map(|(n, v)| format!("{n}={v}"))
            .collect();
        format!("{}[{}]", self.module, d.join(","))
    }
}
