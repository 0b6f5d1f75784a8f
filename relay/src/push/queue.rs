//! A bounded queue that never blocks its producer: when full, the oldest
//! item makes room (the switchboard must never wait on push).

use std::collections::VecDeque;
use std::sync::Mutex;

use tokio::sync::Notify;

use crate::sync::lock;

pub struct Queue<T> {
    items: Mutex<VecDeque<T>>,
    capacity: usize,
    ready: Notify,
}

impl<T> Queue<T> {
    pub fn new(capacity: usize) -> Queue<T> {
        Queue { items: Mutex::new(VecDeque::new()), capacity: capacity.max(1), ready: Notify::new() }
    }

    /// Queues `item`; `true` when the oldest item was dropped for it.
    pub fn push(&self, item: T) -> bool {
        let mut items = lock(&self.items);
        let dropped = items.len() >= self.capacity;
        if dropped {
            items.pop_front();
        }
        items.push_back(item);
        drop(items);
        self.ready.notify_one();
        dropped
    }

    /// Everything queued, waiting until there is something.
    pub async fn drain(&self) -> Vec<T> {
        loop {
            let notified = self.ready.notified();
            {
                let mut items = lock(&self.items);
                if !items.is_empty() {
                    return items.drain(..).collect();
                }
            }
            notified.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_full_queue_drops_its_oldest() {
        let q = Queue::new(2);
        assert!(!q.push(1));
        assert!(!q.push(2));
        assert!(q.push(3));
        assert_eq!(q.drain().await, vec![2, 3]);
    }
}
