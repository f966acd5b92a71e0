//! A bump allocator for guests.
//!
//! The host runs every decision in a fresh instance and drops it afterwards, so
//! a guest never needs memory back: `dealloc` is a no-op and `alloc` is a pointer
//! bump, which makes the canonical ABI's `cabi_realloc` (one call per string and
//! list the host lowers) and the guest's own allocations cheap. The memory cap
//! still applies: when the host refuses to grow memory, allocation fails and the
//! guest traps.
//!
//! ```text
//! #[global_allocator]
//! static ALLOC: rekon_guest::alloc::BumpAlloc = rekon_guest::alloc::BumpAlloc::new();
//! ```

use core::alloc::{GlobalAlloc, Layout};
use core::cell::Cell;

const PAGE: usize = 64 * 1024;

/// Bump allocation in pages taken with `memory.grow`.
pub struct BumpAlloc {
    next: Cell<usize>,
    end: Cell<usize>,
}

// SAFETY: a wasm32 guest instance runs on one thread.
unsafe impl Sync for BumpAlloc {}

impl BumpAlloc {
    pub const fn new() -> Self {
        Self {
            next: Cell::new(0),
            end: Cell::new(0),
        }
    }
}

impl Default for BumpAlloc {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(target_arch = "wasm32")]
fn grow(pages: usize) -> Option<usize> {
    let previous = core::arch::wasm32::memory_grow(0, pages);
    (previous != usize::MAX).then_some(previous * PAGE)
}

#[cfg(not(target_arch = "wasm32"))]
fn grow(_pages: usize) -> Option<usize> {
    None
}

// SAFETY: every block returned is fresh memory of at least `layout.size()` bytes
// at `layout.align()`, and is never handed out twice.
unsafe impl GlobalAlloc for BumpAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let fits = |next: usize| {
            let start = next.checked_next_multiple_of(layout.align())?;
            Some((start, start.checked_add(layout.size())?))
        };
        if let Some((start, end)) = fits(self.next.get())
            && end <= self.end.get()
        {
            self.next.set(end);
            return start as *mut u8;
        }
        // Grow by whole pages. Memory is only contiguous with the current region
        // if nothing else (libc's own malloc) grew it meanwhile; otherwise the
        // rest of the old region is abandoned.
        let pages = (layout.size() + layout.align()).div_ceil(PAGE).max(1);
        let Some(base) = grow(pages) else {
            return core::ptr::null_mut();
        };
        let region_end = base + pages * PAGE;
        let next = if base == self.end.get() {
            self.next.get()
        } else {
            base
        };
        match fits(next) {
            Some((start, end)) if end <= region_end => {
                self.next.set(end);
                self.end.set(region_end);
                start as *mut u8
            }
            _ => {
                // `next` was in the old region and the block spans past the new
                // pages: start over at the base of the new ones.
                let (start, end) = fits(base).expect("a page-aligned base fits");
                self.next.set(end);
                self.end.set(region_end);
                start as *mut u8
            }
        }
    }

    unsafe fn dealloc(&self, _ptr: *mut u8, _layout: Layout) {}
}
