//! The agent's attention requests, as far as answering them goes, bounded.
//! When full, the oldest request that is no longer open is forgotten first.

use std::collections::{HashMap, VecDeque};

use crate::control::answer::OpenRequest;

/// Whether a request can still take an answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RequestState {
    Open,
    /// A respond command was accepted for it.
    Answered {
        command: String,
    },
    /// The agent closed it another way (timeout, dismissed, answered out of band).
    Closed,
}

#[derive(Debug)]
pub(super) struct Requests {
    capacity: usize,
    entries: HashMap<String, (OpenRequest, RequestState)>,
    order: VecDeque<String>,
}

impl Requests {
    pub(super) fn new(capacity: usize) -> Requests {
        Requests { capacity: capacity.max(1), entries: HashMap::new(), order: VecDeque::new() }
    }

    pub(super) fn open(&mut self, request: OpenRequest) {
        let id = request.id.clone();
        if self.entries.insert(id.clone(), (request, RequestState::Open)).is_none() {
            self.order.push_back(id);
        }
        while self.order.len() > self.capacity {
            let victim = self
                .order
                .iter()
                .position(|id| self.entries.get(id).is_some_and(|(_, s)| *s != RequestState::Open))
                .unwrap_or(0);
            if let Some(id) = self.order.remove(victim) {
                self.entries.remove(&id);
            }
        }
    }

    pub(super) fn get(&self, id: &str) -> Option<&(OpenRequest, RequestState)> {
        self.entries.get(id)
    }

    pub(super) fn set_state(&mut self, id: &str, state: RequestState) -> bool {
        match self.entries.get_mut(id) {
            Some(entry) => {
                entry.1 = state;
                true
            }
            None => false,
        }
    }

    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }
}
