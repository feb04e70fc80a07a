//! The one error type of warpmap.

use std::fmt;

/// Everything that can go wrong in warpmap. Bad input, a full table, a missing GPU or NVRTC:
/// each is a variant here, never a panic.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No CUDA driver library or no GPU (or no GPU of the asked ordinal). `reason` says which;
    /// the CPU backend works without either. A driver that is present but fails is
    /// [`Error::DriverInit`] instead.
    #[error("no CUDA device: {reason}")]
    NoDevice {
        /// What was missing (the driver library, a GPU, ...).
        reason: String,
    },
    /// The CUDA driver library is present, but it failed to start the GPU: `cuInit` failed
    /// (a driver/kernel-module mismatch, a driver too old for CUDA 13, a device in a bad
    /// state, ...) or a context could not be created. Unlike [`Error::NoDevice`] this is not
    /// a machine without a GPU: falling back to the CPU would hide a broken install, so callers
    /// should report it (`nvidia-smi` usually shows the same fault).
    #[error(
        "the CUDA driver is present but failed to start the GPU ({context}): {code}: {message}; \
         check the driver install (nvidia-smi), or use the CPU backend deliberately"
    )]
    DriverInit {
        /// What warpmap was doing ("cuInit", "creating the context of GPU 0", ...).
        context: String,
        /// The driver's error code, e.g. `CUDA_ERROR_SYSTEM_DRIVER_MISMATCH`.
        code: String,
        /// The driver's own words.
        message: String,
    },
    /// A CUDA driver call failed.
    #[error("CUDA driver error in {context}: {message}")]
    Driver {
        /// What warpmap was doing.
        context: String,
        /// The driver's own words.
        message: String,
    },
    /// NVRTC (the CUDA run-time compiler) could not be found or loaded.
    #[error("NVRTC not found: {searched}.\n  remedy: {remedy}")]
    NvrtcMissing {
        /// The places that were searched.
        searched: String,
        /// What to install.
        remedy: String,
    },
    /// NCCL (for communicators over several GPUs, cargo feature `nccl`) could not be found or
    /// loaded.
    #[error("NCCL not found: {searched}.\n  remedy: {remedy}")]
    NcclMissing {
        /// The places that were searched, and why each failed.
        searched: String,
        /// What to install.
        remedy: String,
    },
    /// An NCCL call failed.
    #[error("NCCL error in {context}: {message}")]
    Nccl {
        /// What warpmap was doing.
        context: String,
        /// NCCL's result code and words.
        message: String,
    },
    /// NVRTC rejected a kernel. `log` is NVRTC's log; its file:line names point at `kernels/`.
    #[error("kernel compile failed ({module}, options {options}):\n{log}")]
    Compile {
        /// Which kernel module.
        module: String,
        /// The NVRTC options used.
        options: String,
        /// NVRTC's log.
        log: String,
    },
    /// Device memory is exhausted (or the request is larger than the device).
    #[error("out of device memory: asked for {requested_bytes} bytes, {free_bytes} free")]
    OutOfMemory {
        /// Bytes requested.
        requested_bytes: u64,
        /// Bytes free on the device when asked (0 when unknown).
        free_bytes: u64,
    },
    /// Some keys of an insert could not be placed (probe limit reached or table full). They are
    /// not in the table; every other key of the batch is. Use
    /// [`HashTable::insert_with_status`](crate::HashTable::insert_with_status) to learn which.
    ///
    /// `batch` is the size of the batch the keys came from, or 0 when they came from the
    /// asynchronous inserts that [`DeviceHashTable::synchronize`] reports (one or several
    /// batches since the last report; their total is not tracked): the message then says so
    /// instead of "N of 0 keys". Build it with [`Error::table_full`] or
    /// [`Error::table_full_async`].
    ///
    /// [`DeviceHashTable::synchronize`]: crate::DeviceHashTable::synchronize
    #[error("{}", table_full_message(*.failed, *.batch, *.capacity))]
    TableFull {
        /// How many keys failed.
        failed: usize,
        /// The batch size; 0 for the failures of asynchronous inserts (see above).
        batch: usize,
        /// The table's capacity in slots.
        capacity: usize,
    },
    /// A kernel reported a status it should never report (a bug or a corrupted table). `bits`
    /// is never 0: a count that disagrees with what was found is [`Error::CountMismatch`].
    #[error("kernel status error in {kernel}: status bits {bits:#x} ({names})")]
    KernelStatus {
        /// The kernel.
        kernel: String,
        /// The status bits (see [`crate::status`]).
        bits: u32,
        /// The bits' names.
        names: String,
    },
    /// A count the table keeps and what an operation found disagree: a retrieve found a
    /// different number of pairs than the stored count says, a rehash placed fewer keys than it
    /// moved. A bug or a corrupted table, never the caller's input.
    #[error(
        "count mismatch in {operation}: expected {expected}, got {got} (a bug or a corrupted table)"
    )]
    CountMismatch {
        /// What disagreed, e.g. `"warpdrive retrieve: stored pairs"`, `"stadium rehash: keys
        /// placed"`.
        operation: String,
        /// What the count says.
        expected: usize,
        /// What the operation found.
        got: usize,
    },
    /// The caller's input is not acceptable (mismatched lengths, capacity 0, ...).
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// The key/value type or table parameter is not supported by this scheme.
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// A file operation failed (kernel cache, bench output).
    #[error("I/O error on {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
}

/// `Result<T, warpmap::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Shorthand for [`Error::InvalidInput`].
    pub fn invalid(msg: impl fmt::Display) -> Self {
        Error::InvalidInput(msg.to_string())
    }

    /// [`Error::TableFull`] for a batch of `batch` keys of which `failed` could not be placed.
    ///
    /// ```
    /// let e = warpmap::Error::table_full(3, 1000, 998);
    /// assert_eq!(e.to_string(), "table full: 3 of 1000 keys could not be placed (capacity 998)");
    /// ```
    pub fn table_full(failed: usize, batch: usize, capacity: usize) -> Self {
        Error::TableFull {
            failed,
            batch,
            capacity,
        }
    }

    /// [`Error::TableFull`] for the asynchronous inserts reported by
    /// [`DeviceHashTable::synchronize`](crate::DeviceHashTable::synchronize): `failed` keys
    /// since the last report, out of a total that is not known (`batch` is 0).
    ///
    /// ```
    /// let e = warpmap::Error::table_full_async(3, 998);
    /// assert_eq!(
    ///     e.to_string(),
    ///     "table full: 3 keys of the asynchronous inserts since the last synchronize could not \
    ///      be placed (capacity 998)"
    /// );
    /// ```
    pub fn table_full_async(failed: usize, capacity: usize) -> Self {
        Error::table_full(failed, 0, capacity)
    }
}

/// The message of [`Error::TableFull`]: `batch` 0 means the asynchronous report.
fn table_full_message(failed: usize, batch: usize, capacity: usize) -> String {
    if batch == 0 {
        format!(
            "table full: {failed} keys of the asynchronous inserts since the last synchronize \
             could not be placed (capacity {capacity})"
        )
    } else {
        format!("table full: {failed} of {batch} keys could not be placed (capacity {capacity})")
    }
}

/// Checks that two batch slices have equal lengths.
pub(crate) fn check_same_len(what: &str, a: usize, b: usize) -> Result<()> {
    if a != b {
        return Err(Error::invalid(format!(
            "{what}: {a} keys but {b} values/outputs (lengths must match)"
        )));
    }
    Ok(())
}
