//! Locks that survive a panic. A panic while a lock is held poisons a
//! `std::sync::Mutex`; every later `lock().unwrap()` would then panic too,
//! turning one bad request into a relay that answers nothing. The state
//! behind every relay lock is kept consistent step by step (no invariant
//! spans a panic point), so the guard is taken back as it is.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Locks `mutex`, recovering the guard if a previous holder panicked.
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
