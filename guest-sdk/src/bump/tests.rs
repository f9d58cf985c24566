//! The bump allocator over a simulated linear memory: a page-aligned native buffer per test
//! thread that `grow` hands out page by page, up to a limit (the host's memory cap), and that
//! a test can grow behind the allocator's back (another allocator in the same module).

use std::alloc::{GlobalAlloc, Layout};
use std::cell::RefCell;

use super::{BumpAllocator, GROW_STEP_PAGES, PAGE};

/// The simulated memory of this thread: first page number, pages handed out, page limit.
struct Memory {
    base_page: usize,
    used: usize,
    limit: usize,
    grows: Vec<usize>,
    /// The simulated initial memory's free end (`__heap_base` to the initial size).
    initial: (usize, usize),
}

thread_local! {
    static MEMORY: RefCell<Option<Memory>> = const { RefCell::new(None) };
}

/// A fresh simulated memory of at most `limit` pages for this thread (leaked: tests are short).
fn memory(limit: usize) {
    let layout = Layout::from_size_align(limit * PAGE, PAGE).unwrap();
    // SAFETY: non-zero size.
    let base = unsafe { std::alloc::alloc_zeroed(layout) } as usize;
    assert_ne!(base, 0);
    MEMORY.with(|m| {
        *m.borrow_mut() = Some(Memory {
            base_page: base / PAGE,
            used: 0,
            limit,
            grows: Vec::new(),
            initial: (0, 0),
        })
    });
}

/// A fresh simulated memory whose first `pages` pages are the module's initial memory, with
/// its data ending `heap_base` bytes in: the allocator's free start.
fn memory_with_initial(limit: usize, pages: usize, heap_base: usize) {
    memory(limit);
    MEMORY.with(|m| {
        let mut m = m.borrow_mut();
        let m = m.as_mut().unwrap();
        m.used = pages;
        let base = m.base_page * PAGE;
        m.initial = (base + heap_base, base + pages * PAGE);
    });
}

/// The simulated `__heap_base` and initial memory end.
pub(super) fn initial_free() -> (usize, usize) {
    MEMORY.with(|m| m.borrow().as_ref().expect("memory() first").initial)
}

/// `memory.grow` on the simulated memory: the previous size (as an absolute page number, like
/// wasm's, whose memory starts at address 0), or `None` past the limit.
pub(super) fn grow(pages: usize) -> Option<usize> {
    MEMORY.with(|m| {
        let mut m = m.borrow_mut();
        let m = m.as_mut().expect("memory() first");
        if m.used + pages > m.limit {
            return None;
        }
        let previous = m.base_page + m.used;
        m.used += pages;
        m.grows.push(pages);
        Some(previous)
    })
}

fn grows() -> Vec<usize> {
    MEMORY.with(|m| m.borrow().as_ref().unwrap().grows.clone())
}

fn alloc(a: &BumpAllocator, size: usize, align: usize) -> *mut u8 {
    // SAFETY: sizes in these tests are non-zero.
    unsafe { a.alloc(Layout::from_size_align(size, align).unwrap()) }
}

#[test]
fn allocations_are_aligned_disjoint_and_keep_their_bytes() {
    memory(64);
    let a = BumpAllocator::new();
    let mut blocks = Vec::new();
    for i in 0..500usize {
        let (size, align) = (1 + (i * 37) % 300, 1 << (i % 7));
        let p = alloc(&a, size, align);
        assert!(!p.is_null());
        assert_eq!(p as usize % align, 0, "block {i} aligned to {align}");
        // SAFETY: `p` is valid for `size` bytes.
        unsafe { std::ptr::write_bytes(p, i as u8, size) };
        blocks.push((p as usize, size, i as u8));
    }
    blocks.sort();
    for w in blocks.windows(2) {
        assert!(w[0].0 + w[0].1 <= w[1].0, "blocks overlap");
    }
    for &(p, size, byte) in &blocks {
        // SAFETY: each block is still allocated and was filled with `byte`.
        let bytes = unsafe { std::slice::from_raw_parts(p as *const u8, size) };
        assert!(bytes.iter().all(|&b| b == byte), "a block was overwritten");
    }
}

#[test]
fn freeing_the_last_allocation_reuses_it_and_freeing_an_older_one_does_not() {
    memory(16);
    let a = BumpAllocator::new();
    let first = alloc(&a, 100, 8);
    let second = alloc(&a, 100, 8);
    // SAFETY: `first` was allocated with this layout; it is not the top, so it stays used.
    unsafe { a.dealloc(first, Layout::from_size_align(100, 8).unwrap()) };
    let third = alloc(&a, 100, 8);
    assert!(
        third as usize >= second as usize + 100,
        "an older block is never reused"
    );
    // SAFETY: `third` is the top.
    unsafe { a.dealloc(third, Layout::from_size_align(100, 8).unwrap()) };
    assert_eq!(alloc(&a, 100, 8), third, "the top is handed out again");
}

#[test]
fn realloc_grows_the_last_allocation_in_place_and_copies_any_other() {
    memory(16);
    let a = BumpAllocator::new();
    let layout = Layout::from_size_align(16, 8).unwrap();
    let older = alloc(&a, 16, 8);
    let top = alloc(&a, 16, 8);
    // SAFETY: both valid for 16 bytes.
    unsafe {
        std::ptr::write_bytes(older, 7, 16);
        std::ptr::write_bytes(top, 9, 16);
    }
    // SAFETY: allocated by `a` with `layout`; new sizes non-zero.
    let grown = unsafe { a.realloc(top, layout, 4_000) };
    assert_eq!(grown, top, "the top grows in place");
    // SAFETY: `older` is not the top any more; realloc must move it and keep its bytes.
    let moved = unsafe { a.realloc(older, layout, 64) };
    assert_ne!(moved, older);
    assert!(
        moved as usize >= top as usize + 4_000,
        "moved past the grown top"
    );
    // SAFETY: `moved` is valid for 64 bytes, of which the first 16 were copied.
    let bytes = unsafe { std::slice::from_raw_parts(moved, 16) };
    assert!(bytes.iter().all(|&b| b == 7), "realloc kept the bytes");
    // Shrinking an older block keeps it where it is.
    // SAFETY: `grown` was allocated with 4,000 bytes.
    let shrunk = unsafe { a.realloc(grown, Layout::from_size_align(4_000, 8).unwrap(), 8) };
    assert_eq!(shrunk, grown);
}

#[test]
fn memory_grows_by_doubling_up_to_the_step_and_by_what_a_large_allocation_needs() {
    memory(256);
    let a = BumpAllocator::new();
    for _ in 0..40 {
        assert!(!alloc(&a, PAGE / 2, 8).is_null());
    }
    let steps = grows();
    assert_eq!(&steps[..5], &[1, 1, 2, 4, 8], "doubling from one page");
    assert!(
        steps[5..].iter().all(|&s| s == GROW_STEP_PAGES),
        "{steps:?}"
    );
    // A block larger than a step grows by what it needs (plus its alignment slack).
    assert!(!alloc(&a, 40 * PAGE, 8).is_null());
    assert_eq!(*grows().last().unwrap(), 41);
}

#[test]
fn an_allocation_past_the_memory_cap_is_refused_with_null() {
    memory(4);
    let a = BumpAllocator::new();
    assert!(!alloc(&a, 3 * PAGE, 8).is_null());
    assert!(alloc(&a, 2 * PAGE, 8).is_null(), "only one page is left");
    assert!(!alloc(&a, 100, 8).is_null(), "a small one still fits");
}

#[test]
fn memory_grown_by_someone_else_is_never_handed_out() {
    memory(64);
    let a = BumpAllocator::new();
    let before = alloc(&a, PAGE / 2, 8) as usize;
    // Another allocator in the module grows memory: its pages follow ours.
    let theirs = grow(4).unwrap() * PAGE;
    let mut ours = Vec::new();
    for _ in 0..8 {
        ours.push(alloc(&a, PAGE / 2, 8) as usize);
    }
    for p in ours.iter().copied().chain([before]) {
        assert!(
            p + PAGE / 2 <= theirs || p >= theirs + 4 * PAGE,
            "a block at {p:#x} lies in the foreign pages at {theirs:#x}"
        );
    }
}

#[test]
fn the_initial_memorys_free_end_is_used_before_memory_grows() {
    memory_with_initial(16, 2, PAGE + 100);
    let a = BumpAllocator::new();
    let first = alloc(&a, 1_000, 8) as usize;
    let base = MEMORY.with(|m| m.borrow().as_ref().unwrap().base_page * PAGE);
    assert_eq!(first, base + PAGE + 104, "from __heap_base, aligned");
    let second = alloc(&a, PAGE / 2, 8) as usize;
    assert!(second + PAGE / 2 <= base + 2 * PAGE);
    assert!(grows().is_empty(), "a small call never grows memory");
    // Past the initial memory it grows, right after it: the block may start in what is left
    // of the initial memory and go on into the grown pages.
    let big = alloc(&a, PAGE, 8) as usize;
    assert_eq!(grows().len(), 1);
    assert!(big >= second + PAGE / 2);
    assert!(big + PAGE <= base + (2 + grows()[0]) * PAGE);
}
