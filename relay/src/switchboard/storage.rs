//! Where accepted events become history. One interface, three homes:
//!
//! - [`Memory`]: the switchboard's buffers are the history; nothing outlives the
//!   process.
//! - [`DataDir`]: the buffers are mirrored into a database on disk, in
//!   groups, off the switchboard's locks; a batch is answered once its group is
//!   synced.
//! - JetStream (`crate::tier`): a stream shared by every member of a tier is
//!   the history; each member admits it, in stream order, into its buffers.
//!
//! The switchboard checks a batch, then hands it to [`Storage::append`] with a way
//! to admit it into this process's buffers and fan it out: the local homes
//! admit at once, the shared one when the batch comes back from the stream.

use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::Arc;

use aep_engine::Event;
use tokio::sync::oneshot;

use super::{ConnId, IngestReport, Origin};
use crate::buffer::{Committed, Committer, Op};
use crate::held::HeldEvent;

/// A checked batch on its way into history.
pub struct Batch {
    pub origin: Origin,
    /// Who sent it: a session's first positioned event makes them its owner.
    pub principal: Arc<str>,
    pub events: Vec<(Event, Arc<HeldEvent>)>,
    pub kind: Kind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Emitted events.
    Events,
    /// A forwarded command: kept in its session's history and seen by
    /// every subscriber except its target, which already has it.
    Command { target: Option<ConnId> },
}

/// What admitting a batch into this process's buffers did.
pub struct Admitted {
    pub report: IngestReport,
    /// The buffers' changes, for durable history to write.
    pub journal: Vec<Op>,
}

/// One home of history (see the module docs).
pub trait Storage: Send + Sync {
    /// Takes `batch` into history. Called under the switchboard's fan-out lock, so
    /// the order of calls is the order of history; `admit` admits a batch
    /// into this process's buffers and fans it out.
    fn append(&self, batch: Batch, admit: &mut dyn FnMut(Batch) -> Admitted) -> Receipt;
}

/// History in this process's memory only.
pub struct Memory;

impl Storage for Memory {
    fn append(&self, batch: Batch, admit: &mut dyn FnMut(Batch) -> Admitted) -> Receipt {
        Receipt::ready(admit(batch).report)
    }
}

/// History mirrored on disk (`--data-dir`), written by group commit.
pub struct DataDir {
    pub dir: std::path::PathBuf,
    pub committer: Committer,
}

impl Storage for DataDir {
    fn append(&self, batch: Batch, admit: &mut dyn FnMut(Batch) -> Admitted) -> Receipt {
        let admitted = admit(batch);
        Receipt(Pending::Disk(admitted.report, self.committer.submit(admitted.journal)))
    }
}

/// Resolves to what became of a batch once it is history: `unsaved` when
/// it could not be made durable.
#[must_use]
pub struct Receipt(Pending);

enum Pending {
    Ready(IngestReport),
    Disk(IngestReport, Committed),
    Elsewhere(oneshot::Receiver<IngestReport>),
}

impl Receipt {
    pub fn ready(report: IngestReport) -> Receipt {
        Receipt(Pending::Ready(report))
    }

    /// A report another task sends once it knows.
    pub fn later() -> (oneshot::Sender<IngestReport>, Receipt) {
        let (tx, rx) = oneshot::channel();
        (tx, Receipt(Pending::Elsewhere(rx)))
    }

    pub fn is_ready(&self) -> bool {
        matches!(self.0, Pending::Ready(_))
    }
}

impl IntoFuture for Receipt {
    type Output = IngestReport;
    type IntoFuture = Pin<Box<dyn Future<Output = IngestReport> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            match self.0 {
                Pending::Ready(report) => report,
                Pending::Disk(report, committed) => match committed.await {
                    Ok(Ok(())) => report,
                    Ok(Err(e)) => {
                        tracing::error!("events held in memory only: {e}");
                        IngestReport { unsaved: true, ..report }
                    }
                    Err(_) => IngestReport { unsaved: true, ..report },
                },
                Pending::Elsewhere(later) => {
                    later.await.unwrap_or(IngestReport { unsaved: true, ..Default::default() })
                }
            }
        })
    }
}
