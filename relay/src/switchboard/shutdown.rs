//! Orderly shutdown: every connection told to close after what is queued,
//! and the connection tasks counted so shutdown can wait for them.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use tokio::sync::watch;

use super::Switchboard;
use crate::outbox::CloseReason;
use crate::sync::lock;

impl Switchboard {
    /// Starts an orderly shutdown: every connection is told to close after
    /// what is already queued.
    pub fn shutdown(&self) {
        self.shutdown.send_replace(true);
        for conn in lock(&self.state).conns.values() {
            conn.outbox.close(CloseReason::Shutdown);
        }
    }

    /// Resolves when shutdown has begun.
    pub fn shutdown_signal(&self) -> watch::Receiver<bool> {
        self.shutdown.subscribe()
    }

    pub fn is_shutting_down(&self) -> bool {
        *self.shutdown.borrow()
    }

    /// Marks a connection task as running until the guard drops.
    pub fn task_guard(self: &Arc<Self>) -> TaskGuard {
        self.tasks.fetch_add(1, Ordering::SeqCst);
        TaskGuard(self.clone())
    }

    /// Connection tasks still running.
    pub fn running_tasks(&self) -> usize {
        self.tasks.load(Ordering::SeqCst)
    }
}

/// Keeps [`Switchboard::running_tasks`] counting a connection task until dropped.
pub struct TaskGuard(Arc<Switchboard>);

impl Drop for TaskGuard {
    fn drop(&mut self) {
        self.0.tasks.fetch_sub(1, Ordering::SeqCst);
    }
}
