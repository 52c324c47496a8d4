//! Locks that survive a panic: a thread that panicked while holding one leaves data that is
//! still whole here (every critical section assigns or clones, never half-updates), so the
//! lock is taken over instead of poisoning every later request.

use std::sync::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// `read`/`write`/`lock` that recover from poisoning.
pub trait Unpoisoned<T> {
    type Read<'a>
    where
        Self: 'a;
    type Write<'a>
    where
        Self: 'a;
    fn read_unpoisoned(&self) -> Self::Read<'_>;
    fn write_unpoisoned(&self) -> Self::Write<'_>;
}

impl<T> Unpoisoned<T> for RwLock<T> {
    type Read<'a>
        = RwLockReadGuard<'a, T>
    where
        T: 'a;
    type Write<'a>
        = RwLockWriteGuard<'a, T>
    where
        T: 'a;
    fn read_unpoisoned(&self) -> RwLockReadGuard<'_, T> {
        self.read().unwrap_or_else(|p| p.into_inner())
    }
    fn write_unpoisoned(&self) -> RwLockWriteGuard<'_, T> {
        self.write().unwrap_or_else(|p| p.into_inner())
    }
}

impl<T> Unpoisoned<T> for Mutex<T> {
    type Read<'a>
        = MutexGuard<'a, T>
    where
        T: 'a;
    type Write<'a>
        = MutexGuard<'a, T>
    where
        T: 'a;
    fn read_unpoisoned(&self) -> MutexGuard<'_, T> {
        self.lock().unwrap_or_else(|p| p.into_inner())
    }
    fn write_unpoisoned(&self) -> MutexGuard<'_, T> {
        self.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_poisoned_lock_is_taken_over() {
        let lock = std::sync::Arc::new(RwLock::new(1));
        let held = lock.clone();
        let _ = std::thread::spawn(move || {
            let _guard = held.write().unwrap();
            panic!("poison it");
        })
        .join();
        assert!(lock.is_poisoned());
        *lock.write_unpoisoned() = 2;
        assert_eq!(*lock.read_unpoisoned(), 2);
        let mutex = Mutex::new(3);
        assert_eq!(*mutex.write_unpoisoned(), 3);
    }
}
