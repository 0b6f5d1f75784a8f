//! Text answers against options (AEP-0008).
