//! Cross-event (stream) rules: terminal exclusivity, position uniqueness,
//! one ack per command, the AEP-0006 `values` rule.
