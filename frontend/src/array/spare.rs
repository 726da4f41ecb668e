//! Spare expression nodes: the allocations of nodes whose last handle dropped, kept by their
//! thread and filled again by the next nodes it builds.
//!
//! A chain of scalar ops builds one node an op and drops them all together when its result
//! drops. Freed one by one, 48 nodes of ~260 bytes overflow glibc's per-thread cache (7 blocks
//! a size) and take its slow paths both ways; kept here, the next chain reuses them with no
//! allocation and no copy of a whole node (`examples/host_overhead`'s chain: see
//! `benches/RESULTS.md`, session 31).
//!
//! Only bare nodes are kept: no operands (taken by [`Expr`]'s drop), no value, no device value,
//! nothing kept alive. A kept node is reachable from nothing but this list, so its address
//! being reused is what the allocator would do.

use std::cell::RefCell;
use std::sync::Arc;

use super::{Array, Expr};

/// Most nodes a thread keeps (about 70 KB).
const MAX: usize = 256;

thread_local! {
    static SPARE: RefCell<Vec<Arc<Expr>>> = const { RefCell::new(Vec::new()) };
}

/// Keeps `a`'s node for reuse if it is bare and this thread has room; drops it otherwise.
/// `a` must hold the only handle on its node and no operands.
pub(super) fn keep(a: Array) {
    let e = &a.e;
    debug_assert!(e.inputs.is_empty());
    if e.value.get().is_some() || e.device.get().is_some() || e.keep.get().is_some() {
        return;
    }
    let mut a = Some(a);
    let _ = SPARE.try_with(|s| {
        if let Ok(mut s) = s.try_borrow_mut() {
            if s.len() < MAX {
                s.push(a.take().expect("the array").e);
            }
        }
    });
    // (`a`, if not kept, drops here: outside the list's borrow.)
}

/// A spare node of this thread, if it has one: its only handle, no operands, nothing held (the
/// caller replaces its fields).
pub(super) fn take() -> Option<Arc<Expr>> {
    SPARE.try_with(|s| s.try_borrow_mut().ok()?.pop()).ok().flatten()
}
