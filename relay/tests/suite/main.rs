//! The relay's integration tests as one binary: each module is what was
//! one test file, all sharing one build of the harness in `support`. The
//! tier's tests (`tier`) start nats-server and are built only with
//! `--features tier-tests`; the test command runs them inside a network
//! namespace of their own (`scripts/test`).

#[macro_use]
mod support;

mod audit;
mod backpressure;
mod binary;
mod browser_socket;
mod buffer_bytes;
mod connection_slots;
mod control;
mod credentials;
mod deflate;
mod demo_agents;
mod durable;
mod eviction;
mod http_ingest;
mod http_timeouts;
mod limits;
mod logging;
mod memory;
mod origin;
mod outage;
mod pairing;
mod principals;
mod push;
mod python_e2e;
mod restart;
mod rules;
mod shutdown;
mod socket;
mod sse;
mod static_files;
#[cfg(feature = "tier-tests")]
mod tier;
mod tls;
