//! The last position delivered per (subscription, session) on one socket,
//! reported in `closing` so the consumer can resume exactly
//! (AEP-0003 §3.5 rule 4).

use std::collections::HashMap;
use std::sync::Arc;

use aep_engine::protocol::frame::{Delivered, SessionPosition};

use crate::buffer::Position;

/// Bounded: at most `cap` (subscription, session) pairs are tracked; later
/// pairs are not (consumers track their own positions, the frame is a
/// courtesy).
pub struct DeliveredPositions {
    by_sub: HashMap<Arc<str>, HashMap<String, Position>>,
    tracked: usize,
    cap: usize,
}

impl DeliveredPositions {
    pub fn new(cap: usize) -> DeliveredPositions {
        DeliveredPositions { by_sub: HashMap::new(), tracked: 0, cap }
    }

    pub fn record(&mut self, sub: &Arc<str>, session: &str, position: Position) {
        let sessions = self.by_sub.entry(sub.clone()).or_default();
        if let Some(p) = sessions.get_mut(session) {
            *p = (*p).max(position);
        } else if self.tracked < self.cap {
            sessions.insert(session.to_owned(), position);
            self.tracked += 1;
        }
    }

    /// The entries of a `closing` frame, sorted for a stable order.
    pub fn entries(&self) -> Vec<Delivered> {
        let mut out: Vec<Delivered> = self
            .by_sub
            .iter()
            .flat_map(|(sub, sessions)| {
                sessions.iter().map(|(session, (epoch, seq))| Delivered {
                    sub: sub.to_string(),
                    position: SessionPosition::new(session.clone(), *epoch, *seq),
                })
            })
            .collect();
        out.sort_by(|a, b| (&a.sub, &a.position.session).cmp(&(&b.sub, &b.position.session)));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_highest_position_within_a_bound() {
        let sub: Arc<str> = Arc::from("a");
        let mut d = DeliveredPositions::new(2);
        d.record(&sub, "s1", (0, 3));
        d.record(&sub, "s1", (0, 2));
        d.record(&sub, "s2", (1, 0));
        d.record(&sub, "s3", (0, 0));
        let e = d.entries();
        assert_eq!(e.len(), 2);
        assert_eq!(e[0].position, SessionPosition::new("s1", 0, 3));
    }
}
