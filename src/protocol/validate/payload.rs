//! Payload (`data`) rules: the per-type schemas of AEP-0002 §5 and the
//! form rules of AEP-0006.
