//! A loopback TCP proxy in front of the relay that a test can cut and
//! restore: an outage between one client and the relay while the relay
//! (and everyone else on it) carries on.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::io::copy_bidirectional;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

pub struct Proxy {
    addr: SocketAddr,
    /// `true` while the path is up; cutting drops every proxied connection
    /// and refuses new ones until restored.
    up: Arc<watch::Sender<bool>>,
}

impl Proxy {
    pub async fn start(upstream: SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let up = Arc::new(watch::Sender::new(true));
        let accepting = up.clone();
        tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                let mut state = accepting.subscribe();
                if !*state.borrow() {
                    drop(client);
                    continue;
                }
                tokio::spawn(async move {
                    let Ok(mut server) = TcpStream::connect(upstream).await else { return };
                    tokio::select! {
                        _ = copy_bidirectional(&mut client, &mut server) => {}
                        _ = state.wait_for(|up| !*up) => {}
                    }
                });
            }
        });
        Proxy { addr, up }
    }

    /// The proxy's address, in place of the relay's.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Drops every connection through the proxy and refuses new ones.
    pub fn cut(&self) {
        self.up.send_replace(false);
    }

    pub fn restore(&self) {
        self.up.send_replace(true);
    }
}
