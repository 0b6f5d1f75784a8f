//! Group commit for durable history: the changes of every batch admitted
//! while the previous transaction was being synced are written together in
//! the next one, on a thread of their own, so the switchboard's locks are never
//! held across a sync and concurrent writers share one sync. Each batch's
//! answer (the 202) still waits for the transaction that holds it.

use std::sync::mpsc;

use tokio::sync::oneshot;

use super::disk::{Disk, DiskError, Op};

struct Job {
    ops: Vec<Op>,
    done: oneshot::Sender<Result<(), DiskError>>,
}

/// Hands changes to the writer thread, in the order they are submitted.
/// Dropping it waits for the thread to write what it has and close the
/// database, so the directory can be opened again at once.
pub struct Committer {
    jobs: Option<mpsc::Sender<Job>>,
    writer: Option<std::thread::JoinHandle<()>>,
}

/// Resolves when a submitted batch of changes is on disk (or could not be
/// written).
pub type Committed = oneshot::Receiver<Result<(), DiskError>>;

impl Committer {
    pub fn start(disk: Disk) -> Committer {
        let (jobs, queue) = mpsc::channel::<Job>();
        let writer = std::thread::Builder::new()
            .name("aep-history".into())
            .spawn(move || write_in_groups(disk, queue))
            .expect("the history writer thread starts");
        Committer { jobs: Some(jobs), writer: Some(writer) }
    }

    /// Queues `ops` behind everything submitted before; call it while the
    /// order of admissions is still held (under the switchboard's lock).
    pub fn submit(&self, ops: Vec<Op>) -> Committed {
        let (done, committed) = oneshot::channel();
        if ops.is_empty() {
            let _ = done.send(Ok(()));
        } else if let Some(jobs) = &self.jobs {
            if let Err(mpsc::SendError(job)) = jobs.send(Job { ops, done }) {
                let _ = job.done.send(Err(DiskError("the history writer stopped".into())));
            }
        }
        committed
    }
}

impl Drop for Committer {
    fn drop(&mut self) {
        self.jobs.take();
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
    }
}

/// One transaction per round: everything queued at its start. Changes that
/// failed to write are kept and written first next round (the emitter's
/// retry, seen as a duplicate in memory, brings the next round).
fn write_in_groups(disk: Disk, queue: mpsc::Receiver<Job>) {
    let mut unwritten: Vec<Op> = Vec::new();
    while let Ok(first) = queue.recv() {
        let mut round = vec![first];
        round.extend(queue.try_iter());
        let result = disk.write(unwritten.iter().chain(round.iter().flat_map(|job| job.ops.iter())));
        if result.is_ok() {
            unwritten.clear();
        }
        for job in round {
            if result.is_err() {
                unwritten.extend(job.ops);
            }
            let _ = job.done.send(result.clone());
        }
    }
}
