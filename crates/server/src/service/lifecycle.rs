//! The lifecycle of a service: INITIALIZING → RUNNING (healthy or degraded, decided by its
//! dependencies) → SHUTTING_DOWN → STOPPED.

use std::sync::atomic::{AtomicU8, Ordering};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Phase {
    /// Providers are connecting; every route but /health answers 503.
    Initializing = 0,
    Running = 1,
    /// Draining: in-flight calls finish, new requests answer 503.
    ShuttingDown = 2,
    Stopped = 3,
}

/// The current phase, shared by the service and its HTTP layers.
#[derive(Debug, Default)]
pub struct Lifecycle(AtomicU8);

impl Lifecycle {
    pub fn phase(&self) -> Phase {
        match self.0.load(Ordering::Acquire) {
            0 => Phase::Initializing,
            1 => Phase::Running,
            2 => Phase::ShuttingDown,
            _ => Phase::Stopped,
        }
    }

    pub fn set(&self, phase: Phase) {
        self.0.store(phase as u8, Ordering::Release);
    }

    /// True while requests other than /health should be turned away.
    pub fn refuses_requests(&self) -> bool {
        self.phase() != Phase::Running
    }
}
