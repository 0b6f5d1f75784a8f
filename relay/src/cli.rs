//! Command-line options (each also readable from the environment).

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::auth::Token;
use crate::config::{Config, ConfigError};
use crate::pairing::DeviceRole;
use crate::public_url::PublicUrl;
use crate::push::PushConfig;
use crate::tls::TlsFiles;

/// An AEP relay: HTTP ingest, SSE and WebSocket fan-out with bounded
/// replay, control routing, and the approval console on the same origin.
#[derive(Parser)]
#[command(name = "aep-relay", version, about, long_about = None)]
pub struct Cli {
    /// Address to listen on.
    #[arg(long, env = "AEP_LISTEN", default_value = "127.0.0.1:8787")]
    pub listen: SocketAddr,

    /// Bearer token required on every request; enables command routing.
    /// Without it the relay is watch-only (development posture). Prefer
    /// --token-file or AEP_TOKEN: a command-line argument shows in the
    /// process list.
    #[arg(long, env = "AEP_TOKEN", hide_env_values = true, conflicts_with = "token_file")]
    pub token: Option<String>,

    /// Read the bearer token from this file (its first line), so it never
    /// appears on the command line or in the process list.
    #[arg(long, env = "AEP_TOKEN_FILE")]
    pub token_file: Option<PathBuf>,

    /// Credentials file: one principal a line, `name roles sha256-of-token`
    /// (roles: agent, operator, viewer, comma-separated). Reloaded when it
    /// changes or on SIGHUP; a removed line is revoked at once.
    #[arg(long, env = "AEP_CREDENTIALS")]
    pub credentials: Option<PathBuf>,

    /// An origin (scheme://host:port) whose pages may use the relay,
    /// besides its own. Repeatable; `*` allows any page (not advised).
    #[arg(long = "allow-origin", env = "AEP_ALLOW_ORIGIN", value_delimiter = ',')]
    pub allow_origins: Vec<String>,

    /// A host name requests may address, besides the loopback names and
    /// the listening address. Repeatable; `*` allows any.
    #[arg(long = "allow-host", env = "AEP_ALLOW_HOST", value_delimiter = ',')]
    pub allow_hosts: Vec<String>,

    /// Serve HTTPS with this certificate chain (PEM, leaf first), needs
    /// --tls-key. Both files are read again when they change, so a renewed
    /// certificate is served without a restart.
    #[arg(long, env = "AEP_TLS_CERT", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,

    /// The private key (PEM) of --tls-cert.
    #[arg(long, env = "AEP_TLS_KEY", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,

    /// An address the relay is reached by (`https://host[:port]`), e.g.
    /// behind a TLS-terminating proxy: its host and origin are served like
    /// the relay's own, and links point at the first one. Repeatable.
    #[arg(long = "public-url", env = "AEP_PUBLIC_URL", value_delimiter = ',', value_name = "URL")]
    pub public_urls: Vec<PublicUrl>,

    /// Pair or unpair a device instead of serving (the default).
    #[command(subcommand)]
    pub command: Option<Command>,

    /// Serve a non-loopback address without TLS or without a token.
    /// Off-host bindings need a bearer token (AEP-0003 §8.1) and TLS, so
    /// the token does not cross the network in clear; without this flag
    /// the relay refuses to start rather than serve either.
    #[arg(long, env = "AEP_INSECURE")]
    pub insecure: bool,

    /// Events kept per session for replay.
    #[arg(long, env = "AEP_BUFFER", default_value_t = Config::default().buffer_depth)]
    pub buffer: usize,

    /// Bytes kept per session for replay.
    #[arg(long, env = "AEP_BUFFER_BYTES", default_value_t = Config::default().buffer_bytes)]
    pub buffer_bytes: usize,

    /// Bytes kept across all sessions for replay. Worst-case replay memory
    /// is about this, whatever the event sizes.
    #[arg(long, env = "AEP_TOTAL_BUFFER_BYTES", default_value_t = Config::default().total_buffer_bytes)]
    pub total_buffer_bytes: usize,

    /// Largest single event, in bytes (HTTP line or WebSocket frame).
    #[arg(long, env = "AEP_MAX_EVENT", default_value_t = Config::default().max_event)]
    pub max_event: usize,

    /// Sessions buffered at once (least recently written is evicted).
    #[arg(long, env = "AEP_MAX_SESSIONS", default_value_t = Config::default().max_sessions)]
    pub max_sessions: usize,

    /// Largest request body or WebSocket message, in bytes.
    #[arg(long, env = "AEP_MAX_BODY", default_value_t = Config::default().max_body)]
    pub max_body: usize,

    /// Most open connections (HTTP and WebSocket); beyond it new ones get 503.
    #[arg(long, env = "AEP_MAX_CONNECTIONS", default_value_t = Config::default().max_connections)]
    pub max_connections: usize,

    /// Most connections one address may hold before it presents a valid
    /// credential.
    #[arg(long, env = "AEP_MAX_CONNECTIONS_PER_ADDRESS", default_value_t = Config::default().max_connections_per_address)]
    pub max_connections_per_address: usize,

    /// Directory holding the console build (index.html, wasm, js, css).
    #[arg(long, env = "AEP_STATIC_DIR", default_value = "dist")]
    pub static_dir: PathBuf,

    /// Keep session history (events, forwarded commands, acks) in an
    /// embedded database in this directory, so a restart or a crash loses
    /// nothing accepted. Without it history is in memory only.
    #[arg(long, env = "AEP_DATA_DIR")]
    pub data_dir: Option<PathBuf>,

    /// How long the audit trail in --data-dir keeps each command with its
    /// ack, outcomes and the request it answered (e.g. 90d, 12h); `0`
    /// keeps none. Independent of the replay buffer.
    #[arg(long, env = "AEP_AUDIT_RETENTION", default_value = "90days", value_parser = crate::audit::parse_retention)]
    pub audit_retention: std::time::Duration,

    /// The most bytes the audit trail keeps; past it the oldest records go.
    #[arg(long, env = "AEP_AUDIT_BYTES", default_value_t = Config::default().audit_bytes)]
    pub audit_bytes: u64,

    /// Run as one member of a relay tier: history and claims are kept in
    /// this NATS server's JetStream (`nats://HOST:PORT`), shared with every
    /// other member started against it. Without it the relay runs alone.
    #[arg(long, env = "AEP_NATS")]
    pub nats: Option<String>,

    /// This member's name within a tier (letters, digits, `-`, `_`);
    /// a unique one is made up when absent.
    #[arg(long, env = "AEP_MEMBER", requires = "nats")]
    pub member: Option<String>,

    /// The VAPID private key (P-256, PKCS#8 PEM) Web Push is signed with. Without
    /// it the key is made once and kept in --data-dir (`vapid.pem`), or
    /// made afresh each run without a data directory.
    #[arg(long, env = "AEP_VAPID_KEY")]
    pub vapid_key: Option<PathBuf>,

    /// Who push services may contact about this relay (VAPID `sub`): a
    /// `mailto:` or `https:` URL.
    #[arg(long, env = "AEP_PUSH_CONTACT", default_value_t = PushConfig::default().contact)]
    pub push_contact: String,

    /// A certificate authority (PEM) trusted for push services besides the
    /// system's: a private push service. Repeatable.
    #[arg(long = "push-ca", env = "AEP_PUSH_CA", value_delimiter = ',')]
    pub push_ca: Vec<PathBuf>,

    /// Start the demonstration agents against this relay.
    #[arg(long)]
    pub demo: bool,

    /// Seed for the demonstration agents, for repeatable runs.
    #[arg(long, requires = "demo")]
    pub demo_seed: Option<u64>,
}

impl Cli {
    /// The relay configuration these options describe.
    pub fn config(&self) -> Result<Config, ConfigError> {
        let token = match self.secret()? {
            None => None,
            Some(secret) => Some(Token::new(secret).ok_or_else(|| {
                ConfigError(
                    "--token is empty (or the token file holds none); omit it for the development posture".into(),
                )
            })?),
        };
        let mut config = Config {
            token,
            credentials_file: self.credentials.clone(),
            allowed_origins: self.allow_origins.clone(),
            allowed_hosts: self.allow_hosts.clone(),
            max_connections_per_address: self.max_connections_per_address,
            buffer_depth: self.buffer,
            buffer_bytes: self.buffer_bytes,
            total_buffer_bytes: self.total_buffer_bytes,
            max_event: self.max_event,
            max_sessions: self.max_sessions,
            max_from: self.max_sessions,
            max_body: self.max_body,
            max_connections: self.max_connections,
            static_dir: Some(self.static_dir.clone()),
            data_dir: self.data_dir.clone(),
            audit_retention: self.audit_retention,
            audit_bytes: self.audit_bytes,
            nats: self.nats.clone(),
            member: self.member.clone(),
            tls: self.tls_files(),
            push: PushConfig {
                vapid_key: self.vapid_key.clone(),
                contact: self.push_contact.clone(),
                extra_roots: self.push_ca.clone(),
                ..PushConfig::default()
            },
            ..Config::default()
        };
        for url in &self.public_urls {
            config.add_public_url(url.clone());
        }
        config.validate()?;
        self.check_exposure(&config)?;
        Ok(config)
    }

    /// The TLS pair, when both files are named (clap requires both or neither).
    fn tls_files(&self) -> Option<TlsFiles> {
        let (cert, key) = (self.tls_cert.clone()?, self.tls_key.clone()?);
        Some(TlsFiles { cert, key })
    }

    /// The single token, from --token / AEP_TOKEN or --token-file.
    pub fn secret(&self) -> Result<Option<String>, ConfigError> {
        if let Some(file) = &self.token_file {
            let text = std::fs::read_to_string(file)
                .map_err(|e| ConfigError(format!("--token-file {}: {e}", file.display())))?;
            return Ok(Some(text.lines().next().unwrap_or("").trim().to_owned()));
        }
        Ok(self.token.clone())
    }

    /// A relay reachable off-host with no token would accept events from,
    /// and stream them to, anyone on the network; with a token but no TLS,
    /// the token itself crosses the network in clear.
    fn check_exposure(&self, config: &Config) -> Result<(), ConfigError> {
        if self.listen.ip().is_loopback() || self.insecure {
            return Ok(());
        }
        if config.control_enabled() {
            if config.tls.is_some() {
                return Ok(());
            }
            return Err(ConfigError(format!(
                "refusing to listen on {} without TLS: every token and command would cross the network in clear, \
                 and a browser treats a plain http:// page from another machine as insecure (no notifications, \
                 no installing, no clipboard). Give --tls-cert and --tls-key, or keep the relay on loopback behind \
                 a TLS proxy (tailscale serve, Caddy, nginx) with --public-url, or pass --insecure for a first look \
                 on a network you trust",
                self.listen
            )));
        }
        Err(ConfigError(format!(
            "refusing to listen on {} without a token: an off-host binding requires a bearer token (AEP-0003 §8.1), \
             and without one anyone who can reach this address may post and read events. \
             Set --token-file (or AEP_TOKEN, or --credentials), listen on a loopback address, or pass --insecure to serve it open anyway",
            self.listen
        )))
    }
}

/// What the binary does instead of serving.
#[derive(Subcommand)]
pub enum Command {
    /// Pair a device: give it a principal of its own in the credentials
    /// file and print its one-tap link and QR code. The token is shown
    /// this once; the file keeps only its hash.
    Pair(PairArgs),
    /// Unpair a device: remove its principal from the credentials file. A
    /// running relay revokes it within a second and closes its sockets.
    Unpair(UnpairArgs),
    /// Work with an audit export (`GET /audit`) offline.
    #[command(subcommand)]
    Audit(AuditCommand),
}

#[derive(Subcommand)]
pub enum AuditCommand {
    /// Check an exported JSONL file: every record unaltered, none missing
    /// from the chain it covers, every record of a selected command with
    /// its event, and its end signed by the relay. Exits 1 when it is broken.
    Verify {
        /// The export, as `GET /audit` answered it.
        file: PathBuf,
        /// The relay's public key as you keep it (64 hex digits, from
        /// `GET /audit/key`): the export's signed head must be signed with it.
        #[arg(long)]
        key: Option<String>,
    },
}

#[derive(Args)]
pub struct PairArgs {
    /// The device's name (letters, digits, `.`, `_`, `-`), new to the file.
    #[arg(long)]
    pub name: String,

    /// What the device may do: answer and steer agents, or only watch.
    #[arg(long, value_enum, default_value_t = DeviceRole::Operator)]
    pub role: DeviceRole,

    /// The credentials file the relay is started with (`--credentials`);
    /// made if it does not exist yet.
    #[arg(long, env = "AEP_CREDENTIALS")]
    pub credentials: PathBuf,

    /// The address the device reaches the relay by; the link points at
    /// the first one. Without it, the relay's default loopback address.
    #[arg(long = "public-url", env = "AEP_PUBLIC_URL", value_delimiter = ',', value_name = "URL")]
    pub public_urls: Vec<PublicUrl>,
}

#[derive(Args)]
pub struct UnpairArgs {
    /// The device's name, as given to `pair`.
    pub name: String,

    /// The credentials file the relay is started with (`--credentials`).
    #[arg(long, env = "AEP_CREDENTIALS")]
    pub credentials: PathBuf,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_flags() {
        let cli = Cli::try_parse_from(["aep-relay"]).unwrap();
        assert_eq!(cli.listen, "127.0.0.1:8787".parse().unwrap());
        let config = cli.config().unwrap();
        assert!(!config.control_enabled());
        assert_eq!(config.static_dir, Some(PathBuf::from("dist")));

        let cli =
            Cli::try_parse_from(["aep-relay", "--token", "t", "--buffer", "8", "--demo", "--demo-seed", "7"]).unwrap();
        let config = cli.config().unwrap();
        assert!(config.control_enabled());
        assert_eq!(config.buffer_depth, 8);
        assert_eq!(cli.demo_seed, Some(7));
    }

    #[test]
    fn refuses_what_cannot_be_honoured() {
        assert!(Cli::try_parse_from(["aep-relay", "--token", ""]).unwrap().config().is_err());
        assert!(Cli::try_parse_from(["aep-relay", "--buffer", "0"]).unwrap().config().is_err());
        assert!(Cli::try_parse_from(["aep-relay", "--demo-seed", "1"]).is_err(), "--demo-seed needs --demo");
        let off_host = |extra: &[&str]| {
            let mut args = vec!["aep-relay", "--listen", "0.0.0.0:8787"];
            args.extend_from_slice(extra);
            Cli::try_parse_from(args).unwrap().config()
        };
        assert!(off_host(&[]).is_err(), "off-host needs a token");
        assert!(off_host(&["--token", "t"]).is_err(), "off-host needs TLS");
        assert!(off_host(&["--token", "t", "--insecure"]).is_ok());
        assert!(off_host(&["--insecure"]).is_ok());
        assert!(Cli::try_parse_from(["aep-relay", "--listen", "[::1]:8787"]).unwrap().config().is_ok());
        assert!(Cli::try_parse_from(["aep-relay", "--public-url", "https://relay.example/console"]).is_err());
        assert!(Cli::try_parse_from(["aep-relay", "pair", "--credentials", "f"]).is_err(), "pair needs a name");
    }

    #[test]
    fn public_urls_are_served_and_linked() {
        let cli = Cli::try_parse_from([
            "aep-relay",
            "--public-url",
            "https://laptop.tailnet.ts.net,https://relay.example:8443",
        ])
        .unwrap();
        let config = cli.config().unwrap();
        assert_eq!(config.console_url().map(PublicUrl::origin), Some("https://laptop.tailnet.ts.net"));
        assert_eq!(config.allowed_hosts, ["laptop.tailnet.ts.net", "relay.example"]);
        assert_eq!(config.allowed_origins, ["https://laptop.tailnet.ts.net", "https://relay.example:8443"]);
    }

    #[test]
    fn serving_stays_the_default_beside_the_subcommands() {
        let cli = Cli::try_parse_from(["aep-relay", "--token", "t"]).unwrap();
        assert!(cli.command.is_none());
        let cli =
            Cli::try_parse_from(["aep-relay", "pair", "--name", "phone", "--credentials", "f", "--role", "viewer"])
                .unwrap();
        assert!(
            matches!(cli.command, Some(Command::Pair(PairArgs { ref name, role: DeviceRole::Viewer, .. })) if name == "phone")
        );
        let cli = Cli::try_parse_from(["aep-relay", "unpair", "phone", "--credentials", "f"]).unwrap();
        assert!(matches!(cli.command, Some(Command::Unpair(UnpairArgs { ref name, .. })) if name == "phone"));
    }

    #[test]
    fn tls_needs_both_files() {
        assert!(Cli::try_parse_from(["aep-relay", "--tls-cert", "c.pem"]).is_err(), "a certificate needs its key");
        assert!(Cli::try_parse_from(["aep-relay", "--tls-key", "k.pem"]).is_err(), "a key needs its certificate");
        let both = Cli::try_parse_from(["aep-relay", "--tls-cert", "c.pem", "--tls-key", "k.pem"]).unwrap();
        let files = both.config().unwrap().tls.unwrap();
        assert_eq!((files.cert, files.key), (PathBuf::from("c.pem"), PathBuf::from("k.pem")));
        assert_eq!(Cli::try_parse_from(["aep-relay"]).unwrap().config().unwrap().tls, None);
    }
}
