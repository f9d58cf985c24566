//! [`BumpAllocator`]: a global allocator for modules, made for the host's one-call instances.
//!
//! The host runs every call in a fresh instance and throws its memory away afterwards
//! (`docs/abi.md`, "One call"), so a module's allocator never has to give memory back
//! for long: it only has to be fast for one call. This one hands out memory by moving a pointer
//! forward: first through the free end of the module's initial memory (from `__heap_base`, the
//! end of its data, to the end of the memory it starts with), then growing linear memory in
//! steps of at least [`GROW_STEP_PAGES`]. A small call fits in the first, so it never grows
//! memory: the host then has no page protection to change for it, before or after. `dealloc` and
//! `realloc` reuse memory only at the top (the last allocation shrinks, frees, or grows in
//! place, which is how a `Vec` that is filled and then dropped behaves); anything freed below
//! the top stays used until the call ends.
//!
//! The trade: an assignor that allocates and frees much more than it keeps (a loop building
//! and dropping temporary collections many times over) reaches the memory cap sooner than with
//! the default allocator, and the host then refuses the call with a memory-cap error. Decode,
//! assign, encode, the shape of every built-in, keeps almost everything it allocates until
//! the end, and runs measurably faster with this allocator (host/benches/RESULTS.md). Opt in
//! per module:
//!
//! ```ignore
//! #[cfg(target_arch = "wasm32")]
//! #[global_allocator]
//! static ALLOCATOR: assignor_sdk::BumpAllocator = assignor_sdk::BumpAllocator::new();
//! ```
//!
//! Single-threaded by construction (wasm32-unknown-unknown without threads), which is what
//! makes the plain `Cell`s sound.

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;

/// Wasm page size.
const PAGE: usize = 65_536;

/// Linear memory grows by what is needed or by as much as the allocator has grown so far,
/// whichever is more, but never by more than this many pages (1 MiB) past what is needed: few
/// `memory.grow` calls, and the memory cap is reached at most one step early.
pub const GROW_STEP_PAGES: usize = 16;

/// A bump allocator over the module's linear memory. See the module docs for when to use it.
pub struct BumpAllocator {
    /// Next free byte.
    next: Cell<usize>,
    /// End of the memory this allocator owns (grown by it); `next <= end`.
    end: Cell<usize>,
    /// Pages grown so far.
    grown_pages: Cell<usize>,
    /// Whether the initial memory's free end has been taken.
    started: Cell<bool>,
}

// SAFETY: wasm32-unknown-unknown modules run on one thread; nothing here is shared across
// threads. Natively the type is only constructed, never installed (see `alloc`).
unsafe impl Sync for BumpAllocator {}

impl BumpAllocator {
    /// An allocator that owns no memory yet: the first allocation grows linear memory.
    #[allow(clippy::new_without_default, reason = "a const fn for a static")]
    pub const fn new() -> BumpAllocator {
        BumpAllocator {
            next: Cell::new(0),
            end: Cell::new(0),
            grown_pages: Cell::new(0),
            started: Cell::new(false),
        }
    }

    /// On first use, takes the free end of the initial memory, if there is one.
    fn start(&self) {
        if self.started.replace(true) {
            return;
        }
        let (start, end) = initial_free();
        if start < end {
            self.next.set(start);
            self.end.set(end);
        }
    }

    /// Grows linear memory so that `size` bytes aligned to `align` fit; the new start of the
    /// allocation, or `None` when memory cannot grow (the host's cap).
    fn grow_for(&self, size: usize, align: usize) -> Option<usize> {
        // Double what this allocator has grown so far, up to a step: a small call stays
        // small (the host resets every page a call touched), a large one grows in big steps.
        let step = self.grown_pages.get().clamp(1, GROW_STEP_PAGES);
        let pages = size.checked_add(align)?.div_ceil(PAGE).max(step);
        let previous = grow(pages)?;
        let base = previous * PAGE;
        if base != self.end.get() {
            // Someone else grew memory in between (or this is the first growth): start over
            // at the new region; what was left of the old one is not used.
            self.next.set(base);
        }
        self.end.set(base + pages * PAGE);
        self.grown_pages.set(self.grown_pages.get() + pages);
        let start = align_up(self.next.get(), align)?;
        (start.checked_add(size)? <= self.end.get()).then_some(start)
    }
}

// SAFETY: `alloc` returns null or `layout.size()` bytes aligned to `layout.align()` from
// between `next` and `end`, memory this allocator grew and has not handed out (only `alloc`
// moves `next` up, past the block it returns); `dealloc` and `realloc` move `next` back only for
// the topmost block, so no live block is handed out twice. Running out of room is a null
// pointer, never a panic (`GlobalAlloc` must not unwind).
unsafe impl GlobalAlloc for BumpAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        self.start();
        let (size, align) = (layout.size(), layout.align());
        let start = match align_up(self.next.get(), align) {
            Some(start) if start.checked_add(size).is_some_and(|e| e <= self.end.get()) => start,
            _ => match self.grow_for(size, align) {
                Some(start) => start,
                None => return std::ptr::null_mut(),
            },
        };
        self.next.set(start + size);
        start as *mut u8
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // Only the last allocation can be given back.
        if ptr as usize + layout.size() == self.next.get() {
            self.next.set(ptr as usize);
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let start = ptr as usize;
        if start + layout.size() == self.next.get() {
            // The last allocation: shrink or grow it in place when it fits.
            if let Some(end) = start.checked_add(new_size)
                && end <= self.end.get()
            {
                self.next.set(end);
                return ptr;
            }
        } else if new_size <= layout.size() {
            return ptr;
        }
        // SAFETY: the caller guarantees `layout.align()` is valid and `new_size` is non-zero
        // and does not overflow when rounded to it (GlobalAlloc::realloc's contract).
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        // SAFETY: `new_layout` has a non-zero size (the caller's contract).
        let new = unsafe { self.alloc(new_layout) };
        if !new.is_null() {
            // SAFETY: both regions are valid for the smaller size and do not overlap (the new
            // one starts at or past the old one's end, which is not the top).
            unsafe { std::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size)) };
            // SAFETY: `ptr` was allocated by this allocator with `layout`.
            unsafe { self.dealloc(ptr, layout) };
        }
        new
    }
}

fn align_up(at: usize, align: usize) -> Option<usize> {
    Some(at.checked_add(align - 1)? & !(align - 1))
}

/// `memory.grow` by `pages`: the previous size in pages, or `None` when refused.
#[cfg(target_arch = "wasm32")]
fn grow(pages: usize) -> Option<usize> {
    let previous = core::arch::wasm32::memory_grow(0, pages);
    (previous != usize::MAX).then_some(previous)
}

/// The module's free initial memory: from `__heap_base` (where the linker put the end of the
/// stack and data) to the end of the memory the module started with.
#[cfg(target_arch = "wasm32")]
fn initial_free() -> (usize, usize) {
    unsafe extern "C" {
        /// Defined by the linker (wasm-ld) at the first byte after the stack and data.
        static __heap_base: u8;
    }
    // Only the address of the linker's symbol is taken (safe for an extern static); it is
    // never read.
    let start = core::ptr::addr_of!(__heap_base) as usize;
    (start, core::arch::wasm32::memory_size(0) * PAGE)
}

/// Natively there is no initial memory: the allocator is only meant for wasm32.
#[cfg(not(any(target_arch = "wasm32", test)))]
fn initial_free() -> (usize, usize) {
    (0, 0)
}

#[cfg(all(test, not(target_arch = "wasm32")))]
use tests::initial_free;

/// Natively there is no linear memory to grow: the allocator is only meant for wasm32.
#[cfg(not(any(target_arch = "wasm32", test)))]
fn grow(_pages: usize) -> Option<usize> {
    None
}

#[cfg(all(test, not(target_arch = "wasm32")))]
use tests::grow;

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests;
