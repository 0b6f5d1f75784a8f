//! A relay tier: several relay processes that behave, to every emitter and
//! consumer, as one relay, built on NATS JetStream.
//!
//! - One history: a JetStream stream ([`log`]) is the one ordered log.
//!   A member publishes a checked batch, answers once the stream holds it,
//!   and every member (the writer too) admits the stream, in order, into
//!   its own buffers and fans it out. Positions are the emitters', so every
//!   member holds the same history and resumes from any position alike.
//! - One control plane: claims are shared in a JetStream key-value bucket
//!   with an expiry ([`claims`]); a command for a claim held on another
//!   member goes to that member over its own subject, which delivers it.
//!
//! Nothing here runs unless the relay is started with `--nats`.

mod claims;
mod log;

use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream;
use sha2::{Digest, Sha256};

use crate::buffer::SessionStore;
use crate::config::{Config, ConfigError};
use crate::switchboard::Switchboard;

/// The stream holding the tier's history.
const STREAM: &str = "AEP_HISTORY";
/// The bucket holding the tier's claims.
const CLAIMS: &str = "aep-claims";

/// A member's connection to the tier, before its switchboard exists.
pub struct Tier {
    client: async_nats::Client,
    js: jetstream::Context,
    member: Arc<str>,
    log: Arc<log::Log>,
    claims: Arc<claims::TierClaims>,
}

impl Tier {
    /// Connects to NATS and makes sure the stream and the claims bucket
    /// exist, with this relay's bounds as the stream's limits.
    pub async fn join(config: &Config) -> Result<Tier, ConfigError> {
        let url = config.nats.as_deref().ok_or_else(|| ConfigError("no NATS server given".into()))?;
        let member: Arc<str> = Arc::from(match &config.member {
            Some(name) if valid_name(name) => name.clone(),
            Some(name) => return Err(ConfigError(format!("--member `{name}`: use letters, digits, `-` and `_`"))),
            None => format!("m{:016x}", rand::random::<u64>()),
        });
        let client = async_nats::ConnectOptions::new()
            .name(format!("aep-relay {member}"))
            .connection_timeout(Duration::from_secs(5))
            .request_timeout(Some(Duration::from_secs(5)))
            .reconnect_delay_callback(|attempts| Duration::from_millis((100 * attempts as u64).min(1_000)))
            .connect(url)
            .await
            .map_err(|e| ConfigError(format!("cannot reach NATS at {url}: {e}")))?;
        let mut js = jetstream::new(client.clone());
        js.set_timeout(log::ACK_TIMEOUT);
        let stream = log::ensure_stream(&js, config).await?;
        let bucket = claims::ensure_bucket(&js).await?;
        let log = log::Log::new(client.clone(), js.clone(), stream, member.clone());
        let claims = Arc::new(claims::TierClaims::new(client.clone(), bucket, member.clone()));
        Ok(Tier { client, js, member, log, claims })
    }

    /// A switchboard whose history is the tier's stream and whose claims are the
    /// tier's.
    pub fn switchboard(&self, config: &Config) -> Switchboard {
        let store = SessionStore::new(crate::switchboard::store_limits(config));
        Switchboard::with(config, store, Box::new(self.log.storage()), self.claims.clone())
    }

    /// Starts admitting the stream into `switchboard` and serving the tier's
    /// requests for it; returns once `switchboard` holds the history written
    /// before it joined.
    pub async fn run(self, switchboard: Arc<Switchboard>) -> Result<(), ConfigError> {
        self.claims.start(switchboard.clone()).await?;
        self.log.start(switchboard).await?;
        let _ = (&self.client, &self.js, &self.member);
        Ok(())
    }
}

fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.len() <= 64 && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// A session name as a subject token: any string a session may be named
/// maps to one token NATS accepts.
fn session_token(session: &str) -> String {
    let digest = Sha256::digest(session.as_bytes());
    digest[..16].iter().map(|b| format!("{b:02x}")).collect()
}
