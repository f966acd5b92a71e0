//! A bump allocator for guests that live for one decision.
//!
//! The host instantiates a fresh component for every decision and drops it
//! afterwards, so freeing memory inside the guest is wasted work: every string
//! the canonical ABI lowers into the guest and every model value is released at
//! once when the instance goes. [`DecisionArena`] hands out memory by bumping a
//! pointer through pages taken from `memory.grow` and reclaims only the most
//! recent allocation (which makes `Vec`/`String` growth in place cheap). When
//! the host's memory cap refuses to grow, allocation fails as usual (a trap).
//!
//! A guest opts in, for its wasm build only:
//!
//! ```text
//! #[cfg(target_arch = "wasm32")]
//! #[global_allocator]
//! static ALLOCATOR: rekon_guest::alloc::DecisionArena = rekon_guest::alloc::DecisionArena::new();
//! ```
//!
//! Do not use it in a guest that a host keeps alive across decisions: nothing
//! but the last allocation is ever reused.

use core::alloc::{GlobalAlloc, Layout};
use core::cell::UnsafeCell;
use core::ptr;

/// The wasm page size.
const PAGE: usize = 64 * 1024;
/// Pages taken per `memory.grow` at least, so small allocations rarely call out.
const MIN_GROW_PAGES: usize = 2;

/// Where the free region of the arena starts and ends.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Region {
    next: usize,
    end: usize,
}

/// Pages of fresh, contiguous memory: `grow(pages)` returns the address of the
/// first new byte, or `None` when the memory cannot grow.
trait Pages {
    fn grow(&mut self, pages: usize) -> Option<usize>;
}

impl Region {
    /// Reserve `layout`, growing through `pages` when the region is too small.
    fn alloc(&mut self, layout: Layout, pages: &mut impl Pages) -> Option<usize> {
        let start = align_up(self.next, layout.align())?;
        let end = start.checked_add(layout.size())?;
        if end <= self.end && self.end != 0 {
            self.next = end;
            return Some(start);
        }
        // Not enough room: take new pages. They follow the current end when no
        // one else grew the memory meanwhile; otherwise start over at them.
        let needed = layout.size().checked_add(layout.align())?;
        let count = needed.div_ceil(PAGE).max(MIN_GROW_PAGES);
        let base = pages.grow(count)?;
        let grown_end = base.checked_add(count * PAGE)?;
        if base == self.end && self.end != 0 {
            self.end = grown_end;
        } else {
            self.next = base;
            self.end = grown_end;
        }
        self.alloc(layout, pages)
    }

    /// Give back `ptr` if it is the last allocation; anything else stays until
    /// the instance goes.
    fn dealloc(&mut self, ptr: usize, size: usize) {
        if ptr + size == self.next {
            self.next = ptr;
        }
    }

    /// Resize the allocation at `ptr`: in place when it shrinks, or when it is
    /// the last one and the region (grown contiguously if need be) has room.
    /// The caller copies the contents when the returned address differs.
    fn realloc(
        &mut self,
        ptr: usize,
        layout: Layout,
        new_size: usize,
        pages: &mut impl Pages,
    ) -> Option<usize> {
        let is_last = ptr + layout.size() == self.next;
        if new_size <= layout.size() {
            if is_last {
                self.next = ptr + new_size;
            }
            return Some(ptr);
        }
        let new_layout = Layout::from_size_align(new_size, layout.align()).ok()?;
        if is_last {
            // Released and taken again, it lands on `ptr` whenever it fits.
            let before = *self;
            self.next = ptr;
            let new = self.alloc(new_layout, pages);
            if new.is_none() {
                *self = before;
            }
            return new;
        }
        self.alloc(new_layout, pages)
    }
}

fn align_up(addr: usize, align: usize) -> Option<usize> {
    Some(addr.checked_add(align - 1)? & !(align - 1))
}

/// The global allocator of a one-decision guest (see the module docs).
pub struct DecisionArena {
    region: UnsafeCell<Region>,
}

// SAFETY: a wasm guest runs on a single thread.
unsafe impl Sync for DecisionArena {}

impl DecisionArena {
    pub const fn new() -> Self {
        Self {
            region: UnsafeCell::new(Region { next: 0, end: 0 }),
        }
    }
}

impl Default for DecisionArena {
    fn default() -> Self {
        Self::new()
    }
}

/// The component's linear memory.
#[cfg(target_arch = "wasm32")]
struct LinearMemory;

#[cfg(target_arch = "wasm32")]
impl Pages for LinearMemory {
    fn grow(&mut self, pages: usize) -> Option<usize> {
        let previous = core::arch::wasm32::memory_grow(0, pages);
        (previous != usize::MAX).then(|| previous * PAGE)
    }
}

/// Natively there is no linear memory to grow: the arena refuses every
/// allocation, so a mistaken `#[global_allocator]` outside wasm fails loudly.
#[cfg(not(target_arch = "wasm32"))]
struct LinearMemory;

#[cfg(not(target_arch = "wasm32"))]
impl Pages for LinearMemory {
    fn grow(&mut self, _pages: usize) -> Option<usize> {
        None
    }
}

unsafe impl GlobalAlloc for DecisionArena {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: single-threaded, and no reference to the region outlives this call.
        let region = unsafe { &mut *self.region.get() };
        region
            .alloc(layout, &mut LinearMemory)
            .map_or(ptr::null_mut(), |addr| addr as *mut u8)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as in `alloc`.
        let region = unsafe { &mut *self.region.get() };
        region.dealloc(ptr as usize, layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as in `alloc`.
        let region = unsafe { &mut *self.region.get() };
        let Some(new) = region.realloc(ptr as usize, layout, new_size, &mut LinearMemory) else {
            return ptr::null_mut();
        };
        let new = new as *mut u8;
        if new != ptr {
            // SAFETY: the new block lies past the old block's end (the arena
            // only moves forward), so the two never overlap.
            unsafe { ptr::copy_nonoverlapping(ptr, new, layout.size()) };
        }
        new
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake linear memory whose size other users may also change.
    struct FakeMemory {
        pages: usize,
        max_pages: usize,
    }

    impl Pages for FakeMemory {
        fn grow(&mut self, pages: usize) -> Option<usize> {
            if self.pages + pages > self.max_pages {
                return None;
            }
            let base = self.pages * PAGE;
            self.pages += pages;
            Some(base)
        }
    }

    fn memory() -> FakeMemory {
        FakeMemory {
            pages: 17,
            max_pages: 64,
        }
    }

    fn layout(size: usize, align: usize) -> Layout {
        Layout::from_size_align(size, align).unwrap()
    }

    #[test]
    fn first_allocation_takes_fresh_pages() {
        let (mut region, mut mem) = (Region::default(), memory());
        assert_eq!(region.alloc(layout(10, 1), &mut mem), Some(17 * PAGE));
        assert_eq!(mem.pages, 17 + MIN_GROW_PAGES);
    }

    #[test]
    fn allocations_bump_and_respect_alignment() {
        let (mut region, mut mem) = (Region::default(), memory());
        let a = region.alloc(layout(3, 1), &mut mem).unwrap();
        let b = region.alloc(layout(8, 8), &mut mem).unwrap();
        assert_eq!(b % 8, 0);
        assert!(b >= a + 3);
        let c = region.alloc(layout(1, 1), &mut mem).unwrap();
        assert_eq!(c, b + 8);
    }

    #[test]
    fn last_allocation_is_reused_after_free() {
        let (mut region, mut mem) = (Region::default(), memory());
        let a = region.alloc(layout(16, 4), &mut mem).unwrap();
        region.dealloc(a, 16);
        assert_eq!(region.alloc(layout(16, 4), &mut mem), Some(a));
    }

    #[test]
    fn earlier_allocations_are_not_reused() {
        let (mut region, mut mem) = (Region::default(), memory());
        let a = region.alloc(layout(16, 4), &mut mem).unwrap();
        let b = region.alloc(layout(16, 4), &mut mem).unwrap();
        region.dealloc(a, 16);
        assert_eq!(region.alloc(layout(16, 4), &mut mem), Some(b + 16));
    }

    #[test]
    fn last_allocation_grows_in_place() {
        let (mut region, mut mem) = (Region::default(), memory());
        let a = region.alloc(layout(16, 1), &mut mem).unwrap();
        assert_eq!(region.realloc(a, layout(16, 1), 1000, &mut mem), Some(a));
        assert_eq!(region.next, a + 1000);
    }

    #[test]
    fn older_allocation_moves_when_grown() {
        let (mut region, mut mem) = (Region::default(), memory());
        let a = region.alloc(layout(16, 1), &mut mem).unwrap();
        let b = region.alloc(layout(16, 1), &mut mem).unwrap();
        assert_eq!(region.realloc(a, layout(16, 1), 32, &mut mem), Some(b + 16));
    }

    #[test]
    fn last_allocation_grows_in_place_across_new_pages() {
        let (mut region, mut mem) = (Region::default(), memory());
        let a = region.alloc(layout(16, 1), &mut mem).unwrap();
        assert_eq!(region.realloc(a, layout(16, 1), 3 * PAGE, &mut mem), Some(a));
        assert_eq!(region.next, a + 3 * PAGE);
    }

    #[test]
    fn shrinking_stays_in_place_and_frees_the_tail_of_the_last() {
        let (mut region, mut mem) = (Region::default(), memory());
        let a = region.alloc(layout(64, 1), &mut mem).unwrap();
        let b = region.alloc(layout(64, 1), &mut mem).unwrap();
        assert_eq!(region.realloc(a, layout(64, 1), 8, &mut mem), Some(a));
        assert_eq!(region.realloc(b, layout(64, 1), 8, &mut mem), Some(b));
        assert_eq!(region.next, b + 8);
    }

    #[test]
    fn failed_growth_of_the_last_allocation_keeps_it() {
        let (mut region, mut mem) = (Region::default(), memory());
        let a = region.alloc(layout(16, 1), &mut mem).unwrap();
        let before = region;
        assert_eq!(region.realloc(a, layout(16, 1), 100 * PAGE, &mut mem), None);
        assert_eq!(region, before);
    }

    #[test]
    fn large_allocation_takes_enough_pages() {
        let (mut region, mut mem) = (Region::default(), memory());
        let a = region.alloc(layout(5 * PAGE, 8), &mut mem).unwrap();
        assert!(a + 5 * PAGE <= region.end);
        assert_eq!(region.end, mem.pages * PAGE);
    }

    #[test]
    fn contiguous_growth_extends_the_region() {
        let (mut region, mut mem) = (Region::default(), memory());
        let a = region.alloc(layout(PAGE, 1), &mut mem).unwrap();
        let b = region.alloc(layout(PAGE + 1, 1), &mut mem).unwrap();
        assert_eq!(b, a + PAGE, "continues right after, no gap");
    }

    #[test]
    fn growth_by_someone_else_starts_a_new_region() {
        let (mut region, mut mem) = (Region::default(), memory());
        region.alloc(layout(PAGE, 1), &mut mem).unwrap();
        let foreign = mem.grow(1).unwrap();
        let b = region.alloc(layout(2 * PAGE, 1), &mut mem).unwrap();
        assert!(b >= foreign + PAGE, "never hands out the other user's page");
    }

    #[test]
    fn refused_growth_fails_the_allocation() {
        let (mut region, mut mem) = (Region::default(), memory());
        assert_eq!(region.alloc(layout(100 * PAGE, 1), &mut mem), None);
        assert_eq!(region.realloc(8, layout(1, 1), 100 * PAGE, &mut mem), None);
    }

    #[test]
    fn native_arena_refuses_to_allocate() {
        let arena = DecisionArena::new();
        // SAFETY: a valid, non-zero layout.
        let ptr = unsafe { arena.alloc(layout(8, 8)) };
        assert!(ptr.is_null());
    }
}
