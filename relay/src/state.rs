//! What every request handler and socket can reach: the switchboard, the
//! configuration, the relay's address and its accepted credentials.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use axum::http::HeaderMap;
use serde_json::Value;

use crate::auth::{self, Access, Denied, Keyring};
use crate::config::Config;
use crate::discovery;
use crate::switchboard::Switchboard;

#[derive(Clone)]
pub struct AppState {
    pub switchboard: Arc<Switchboard>,
    pub config: Arc<Config>,
    pub addr: SocketAddr,
    pub discovery: Arc<Value>,
    pub started: Instant,
    /// The accepted credentials; `None`: none configured (everyone is
    /// anonymous and no command is routed).
    pub keyring: Option<Arc<Keyring>>,
}

impl AppState {
    pub fn new(
        switchboard: Arc<Switchboard>,
        config: Arc<Config>,
        addr: SocketAddr,
        keyring: Option<Arc<Keyring>>,
    ) -> AppState {
        let discovery = Arc::new(discovery::document(&config));
        AppState { switchboard, config, addr, discovery, started: Instant::now(), keyring }
    }

    /// What a request with these headers and query string may do.
    pub fn access(&self, headers: &HeaderMap, query: Option<&str>) -> Result<Access, Denied> {
        auth::check(self.keyring.as_deref(), headers, query)
    }
}
