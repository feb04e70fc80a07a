//! SlabAlloc's memory (slab-hash.txt §V): the pool of super blocks that the slab hash's warps
//! allocate slabs from, and its growth. Device code: the `sl_alloc*` functions of
//! `kernels/slab.cu`.
//!
//! A super block is one device allocation: `memory_blocks` (the paper's N_M) memory blocks of
//! 1024 slabs, then one 1024-bit bitmap per memory block. A slab's 32-bit address is (super
//! block: 8 bits, memory block: 14 bits, unit: 10 bits), so the pool holds at most 255 super
//! blocks (the address of all ones means "no slab") of at most 2^14 memory blocks. The kernels
//! find a super block's memory through a device array of their addresses (read through the
//! read-only cache: it changes only between launches).
//!
//! Unlike the paper's fixed pool (and the public SlabHash's 1 GB), the pool **grows**: before a
//! batch that may insert, the table makes sure the pool has room for it (an estimate, one slab
//! per 15 inserted pairs, checked against the exact count of allocated slabs when the estimate
//! runs short; that count is read from the device, which synchronises) and adds super blocks
//! up to the table's memory budget. An allocation that still finds every memory block full fails
//! for its key (status `TABLE_FULL`); the host-slice operations then grow the pool and insert
//! those keys again, so only an exhausted budget (or device memory) leaves a key out, and then
//! it is reported.

use super::slab::PAIRS_PER_SLAB;
use crate::device::{DeviceBuffer, Gpu};
use crate::{Error, Result};

/// Slabs per memory block (the paper's N_U).
pub const UNITS: usize = 1024;
/// Super blocks a pool can hold (the 8-bit field of an address; 255 is "no slab").
pub const MAX_SUPER_BLOCKS: usize = 255;
/// Memory blocks per super block (the paper's N_M) at most (the 14-bit field of an address).
pub const MAX_MEMORY_BLOCKS: u32 = 1 << 14;
/// Memory blocks per super block by default: 256 (the paper's evaluation), a super block of
/// 32 MiB of 128-byte slabs.
pub const DEFAULT_MEMORY_BLOCKS: u32 = 256;
/// Hashed resident-block changes before an allocation scans every memory block in turn.
pub const DEFAULT_RESIDENT_PROBES: u32 = 32;

/// The pool: its super blocks, the device array of their addresses, and the allocation count.
pub(crate) struct SlabPool {
    /// Each super block's memory (slabs, then bitmaps).
    super_blocks: Vec<DeviceBuffer<u8>>,
    /// `MAX_SUPER_BLOCKS` device addresses (the first `super_blocks.len()` set).
    addresses: DeviceBuffer<u64>,
    /// `[slabs allocated (net)]`, written by the kernels.
    pub(crate) allocated: DeviceBuffer<u64>,
    pub(crate) memory_blocks: u32,
    slab_bytes: usize,
    /// Most bytes the super blocks may take together.
    budget_bytes: usize,
    /// Slabs the pool can still give by the host's estimate (see `reserve`).
    free_estimate: i64,
    /// Reads of the exact count from the device (each synchronises the table's stream): the
    /// table's counter `pool_count_reads`.
    pub(crate) count_reads: u64,
}

impl SlabPool {
    /// A pool of `super_blocks` super blocks of `memory_blocks` memory blocks of slabs of
    /// `slab_bytes`, growing up to `budget_bytes`.
    pub(crate) fn new(
        gpu: &Gpu,
        slab_bytes: usize,
        memory_blocks: u32,
        super_blocks: usize,
        budget_bytes: usize,
    ) -> Result<Self> {
        if memory_blocks == 0 || memory_blocks > MAX_MEMORY_BLOCKS {
            return Err(Error::invalid(format!(
                "memory blocks per super block must be 1 to {MAX_MEMORY_BLOCKS}, not {memory_blocks}"
            )));
        }
        let mut pool = SlabPool {
            super_blocks: Vec::new(),
            addresses: gpu.alloc_filled::<u64>(MAX_SUPER_BLOCKS, 0)?,
            allocated: gpu.alloc_filled::<u64>(1, 0)?,
            memory_blocks,
            slab_bytes,
            budget_bytes,
            free_estimate: 0,
            count_reads: 0,
        };
        for _ in 0..super_blocks.max(1) {
            if !pool.add_super_block(gpu)? {
                return Err(Error::invalid(format!(
                    "a memory budget of {budget_bytes} bytes holds fewer than the {} initial \
                     super blocks of {} bytes",
                    super_blocks.max(1),
                    pool.super_block_bytes()
                )));
            }
        }
        pool.free_estimate = pool.slabs() as i64;
        Ok(pool)
    }

    /// Bytes of one super block: its slabs and its bitmaps.
    pub(crate) fn super_block_bytes(&self) -> usize {
        Self::super_block_bytes_for(self.slab_bytes, self.memory_blocks)
    }

    /// Bytes of a super block of `memory_blocks` memory blocks of `slab_bytes` slabs.
    pub(crate) fn super_block_bytes_for(slab_bytes: usize, memory_blocks: u32) -> usize {
        memory_blocks as usize * (UNITS * slab_bytes + UNITS / 8)
    }

    /// Slabs the pool holds (free or not).
    pub(crate) fn slabs(&self) -> usize {
        self.super_blocks.len() * self.memory_blocks as usize * UNITS
    }

    pub(crate) fn super_block_count(&self) -> usize {
        self.super_blocks.len()
    }

    pub(crate) fn addresses(&self) -> u64 {
        self.addresses.device_address()
    }

    pub(crate) fn memory_bytes(&self) -> usize {
        self.super_blocks
            .iter()
            .map(|b| b.num_bytes())
            .sum::<usize>()
            + self.addresses.num_bytes()
            + self.allocated.num_bytes()
    }

    /// Adds one super block (all ones: free slabs are empty slabs; bitmaps all free) if the
    /// budget, the address space and the device's memory allow; false where one of them does
    /// not.
    pub(crate) fn add_super_block(&mut self, gpu: &Gpu) -> Result<bool> {
        let bytes = self.super_block_bytes();
        if self.super_blocks.len() >= MAX_SUPER_BLOCKS - 1
            || self.memory_bytes() + bytes > self.budget_bytes
        {
            return Ok(false);
        }
        let mut block = match gpu.alloc::<u8>(bytes) {
            Ok(b) => b,
            Err(Error::OutOfMemory { .. }) => return Ok(false),
            Err(e) => return Err(e),
        };
        self.reset(gpu, &mut block)?;
        let at = self.super_blocks.len();
        gpu.copy_to_device_at(&[block.device_address()], &mut self.addresses, at)?;
        self.super_blocks.push(block);
        self.free_estimate += (self.memory_blocks as usize * UNITS) as i64;
        Ok(true)
    }

    /// Empties a super block: slabs all ones (free slabs are empty slabs), bitmaps all free.
    fn reset(&self, gpu: &Gpu, block: &mut DeviceBuffer<u8>) -> Result<()> {
        let slab_area = self.memory_blocks as usize * UNITS * self.slab_bytes;
        gpu.fill_bytes(block, 0xff)?;
        gpu.fill_range(block, slab_area, block.num_bytes() - slab_area, 0)
    }

    /// Slabs allocated now (reads the device: synchronises the table's stream).
    pub(crate) fn allocated(&self, gpu: &Gpu) -> Result<usize> {
        Ok(gpu.download(&self.allocated)?[0] as usize)
    }

    /// Makes room for an operation that may insert `n` pairs: by the estimate (one slab per 15
    /// pairs, from the last exact count), and, where it runs short, from the exact count
    /// (which synchronises), adding super blocks up to the budget so that the batch's estimate
    /// and an eighth of the pool stay free. Never fails for want of budget: the kernels then
    /// report the keys they could not place.
    pub(crate) fn reserve(&mut self, gpu: &Gpu, n: usize) -> Result<()> {
        let cost = n.div_ceil(PAIRS_PER_SLAB) as i64 + 64;
        if self.free_estimate >= cost {
            self.free_estimate -= cost;
            return Ok(());
        }
        let used = self.allocated(gpu)? as i64;
        self.count_reads += 1;
        let want = used + cost + self.slabs() as i64 / 8;
        while (self.slabs() as i64) < want {
            if !self.add_super_block(gpu)? {
                break;
            }
        }
        self.free_estimate = self.slabs() as i64 - used - cost;
        Ok(())
    }

    /// After keys found the pool full: adds a super block (at least one, more while fewer than
    /// `failed` / 15 + an eighth of the pool are free); false when none could be added.
    pub(crate) fn grow_for(&mut self, gpu: &Gpu, failed: usize) -> Result<bool> {
        let used = self.allocated(gpu)?;
        self.count_reads += 1;
        let want = used + failed.div_ceil(PAIRS_PER_SLAB) + self.slabs() / 8;
        let mut grew = false;
        loop {
            if !self.add_super_block(gpu)? {
                break;
            }
            grew = true;
            if self.slabs() >= want {
                break;
            }
        }
        self.free_estimate = self.slabs() as i64 - used as i64;
        Ok(grew)
    }

    /// Forgets every allocation (the table was emptied): bitmaps all free, slabs all ones.
    pub(crate) fn clear(&mut self, gpu: &Gpu) -> Result<()> {
        let mut blocks = std::mem::take(&mut self.super_blocks);
        for b in &mut blocks {
            self.reset(gpu, b)?;
        }
        self.super_blocks = blocks;
        gpu.fill_bytes(&mut self.allocated, 0)?;
        self.free_estimate = self.slabs() as i64;
        Ok(())
    }
}
