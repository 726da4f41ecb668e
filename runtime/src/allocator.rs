//! A pluggable device allocator: CuPy's `cupy.cuda.set_allocator`, kiln's way.
//!
//! CuPy's `set_allocator(f)` replaces the whole allocation path with `f` (a pool's `malloc`,
//! `malloc_managed`, or no pool at all). kiln's device memory pools stay (kiln orders every
//! block's reuse by streams, which a plain function cannot), and [`set_allocator`] replaces
//! where their memory comes from: the [`RawAllocator`] a device's pools call for new
//! allocations, instead of `cuMemAlloc` (managed memory, another library's pool, a counting
//! wrapper). `KILN_GPU_POOL=off` is the form of "no pool" (each buffer its own allocation).
//!
//! Each allocation is given back to the allocator that made it, even after `set_allocator`
//! changed the device's: the addresses a user allocator handed out are remembered until freed.
//! Cached blocks of the device's default pool are given back when the allocator changes, so its
//! later blocks come from the new one.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::{device::Device, error::Result, pool::RawAllocator};

/// A device's allocator, shared.
pub type SharedAllocator = Arc<dyn RawAllocator>;

/// The user allocators: by device, and the allocator of each address they handed out.
#[derive(Default)]
struct Registry {
    by_device: HashMap<usize, SharedAllocator>,
    owners: HashMap<(usize, u64), SharedAllocator>,
}

static REGISTRY: Mutex<Option<Registry>> = Mutex::new(None);
/// Whether any user allocator was ever set (the common case takes no lock).
static ANY: AtomicBool = AtomicBool::new(false);

fn registry() -> MutexGuard<'static, Option<Registry>> {
    REGISTRY.lock().unwrap_or_else(|p| p.into_inner())
}

/// The allocator device `id`'s pools allocate with, when a user set one.
pub(crate) fn current(id: usize) -> Option<SharedAllocator> {
    if !ANY.load(Ordering::Acquire) {
        return None;
    }
    registry().as_ref().and_then(|r| r.by_device.get(&id).cloned())
}

/// Remembers that `allocator` made `ptr` on device `id`.
pub(crate) fn track(id: usize, ptr: u64, allocator: SharedAllocator) {
    registry().get_or_insert_with(Registry::default).owners.insert((id, ptr), allocator);
}

/// The user allocator that made `ptr` on device `id`, forgotten; `None` if `cuMemAlloc` did.
pub(crate) fn take(id: usize, ptr: u64) -> Option<SharedAllocator> {
    if !ANY.load(Ordering::Acquire) {
        return None;
    }
    registry().as_mut().and_then(|r| r.owners.remove(&(id, ptr)))
}

/// Sets the allocator of `device`'s memory pools (CuPy's `set_allocator`; `None`: `cuMemAlloc`
/// again). New raw allocations of the device's pools (the default one and those of
/// [`Device::new_memory_pool`]) come from it; the default pool's cached blocks are given back
/// first. `allocator.alloc` is called with the device's context current, for sizes that are
/// multiples of 512 bytes ([`crate::pool::ALLOCATION_UNIT`]; of 16 with `KILN_GPU_POOL=off`),
/// and must return device memory of that device (or managed memory) aligned to 256 bytes;
/// `free` gets each address back once the pool has waited for its last use.
/// Errors: the device does not exist.
pub fn set_allocator(device: Device, allocator: Option<SharedAllocator>) -> Result<()> {
    let pool = device.memory_pool()?;
    {
        let mut r = registry();
        let r = r.get_or_insert_with(Registry::default);
        match allocator {
            Some(a) => {
                r.by_device.insert(device.id(), a);
                ANY.store(true, Ordering::Release);
            }
            None => {
                r.by_device.remove(&device.id());
            }
        }
    }
    pool.free_all_blocks(None);
    Ok(())
}

/// The allocator set for `device` by [`set_allocator`], if any (CuPy's `get_allocator`).
pub fn get_allocator(device: Device) -> Option<SharedAllocator> {
    current(device.id())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pool::AllocError;

    struct Fake;
    impl RawAllocator for Fake {
        fn alloc(&self, _bytes: usize) -> std::result::Result<u64, AllocError> {
            Ok(0x1000)
        }
        fn free(&self, _ptr: u64, _bytes: usize) {}
        fn mem_info(&self) -> (usize, usize) {
            (0, 0)
        }
    }

    /// Addresses are given back to the allocator that made them, once, per device.
    #[test]
    fn owners_are_remembered_until_freed() {
        let a: SharedAllocator = Arc::new(Fake);
        ANY.store(true, Ordering::Release);
        track(7, 0x1000, a.clone());
        assert!(take(8, 0x1000).is_none(), "another device's address");
        let owner = take(7, 0x1000).expect("tracked");
        assert!(Arc::ptr_eq(&owner, &a));
        assert!(take(7, 0x1000).is_none(), "forgotten once freed");
        assert!(current(7).is_none(), "no allocator set for device 7");
    }
}
