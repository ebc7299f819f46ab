//! What every stage of one load shares: the first failure (which cancels the others), the
//! progress counters and the reject file. Its own module, below the stages and the workers
//! that both use it.

use crate::rejects::Rejects;
use crate::Error;
use inrush_core::Progress;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How often a waiting stage looks at the cancel flag.
pub const CANCEL_POLL: Duration = Duration::from_millis(50);

/// State every stage of one load shares.
pub struct Shared {
    cancelled: AtomicBool,
    first_error: Mutex<Option<Error>>,
    pub progress: Arc<Progress>,
    /// Where refused rows go, when the user allows some.
    pub rejects: Option<Rejects>,
}

impl Shared {
    pub fn new(progress: Arc<Progress>, rejects: Option<Rejects>) -> Self {
        Shared {
            cancelled: AtomicBool::new(false),
            first_error: Mutex::new(None),
            progress,
            rejects,
        }
    }

    pub fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Relaxed)
    }

    /// Keeps the first error only (later ones are consequences) and stops everyone.
    pub fn fail(&self, error: Error) {
        if let Ok(mut slot) = self.first_error.lock() {
            if slot.is_none() {
                *slot = Some(error);
            }
        }
        self.cancelled.store(true, Ordering::Relaxed);
    }

    pub fn take_error(&self) -> Option<Error> {
        self.first_error
            .lock()
            .ok()
            .and_then(|mut slot| slot.take())
    }
}
