//! Keeping llama.cpp's work and the process's exit apart.
//!
//! `exit` destroys llama.cpp's static objects (its backend registry, buffer
//! types) while a decoding thread may still be working: reading a reply
//! again while idle, freeing a dropped model's context, serving a request of
//! a model held in a `static`. The decoding thread does each round of its
//! work under a read lock, and an `atexit` handler takes the write lock: the
//! exit waits for the round in progress, and no other starts.

use std::sync::{Once, RwLock, RwLockReadGuard};

static WORK: RwLock<()> = RwLock::new(());

/// Held by the decoding thread while it works with llama.cpp.
pub(super) fn working() -> RwLockReadGuard<'static, ()> {
    static HANDLER: Once = Once::new();
    HANDLER.call_once(|| {
        // Registered after llama.cpp's statics were built (a model is
        // loaded), so it runs before their destructors.
        // SAFETY: `atexit` takes a plain function with no arguments.
        unsafe { libc::atexit(hold_at_exit) };
    });
    WORK.read().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Wait for the decoding threads' work in progress, and keep them from
/// starting more while the process ends.
extern "C" fn hold_at_exit() {
    std::mem::forget(
        WORK.write()
            .unwrap_or_else(|poisoned| poisoned.into_inner()),
    );
}
