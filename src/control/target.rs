//! Target side: see the control module docs.
