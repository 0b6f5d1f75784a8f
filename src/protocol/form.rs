//! Structured input (AEP-0006): field specs and form answers.
