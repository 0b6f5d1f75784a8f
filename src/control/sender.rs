//! Sender side: see the control module docs.
