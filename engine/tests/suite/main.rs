//! The engine's integration tests as one binary: each module is what was
//! one test file. `corpus_redaction` needs the adapter-side redaction
//! (`--features redact`).

mod client_agent;
mod client_connection;
mod consumer_conformance;
mod control_sender;
mod control_target;
mod corpus_attr_match;
mod corpus_capture;
#[cfg(feature = "redact")]
mod corpus_redaction;
mod corpus_stream_invalid;
mod corpus_validation;
mod error_messages;
mod layering;
mod robustness;
mod store_fold;
mod vocabulary_literals;
