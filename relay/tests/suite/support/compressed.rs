//! A WebSocket client that offers permessage-deflate as Node's built-in
//! `WebSocket` and Chromium do (`permessage-deflate;
//! client_max_window_bits`), compresses what it sends and inflates what it
//! receives: the binding real consoles use. ratchet's client; its reads run
//! in a task of their own, since they are not cancellation safe and tests
//! read with timeouts.

use bytes::BytesMut;
use ratchet_core::{CloseCode, CloseReason, Message, SubprotocolRegistry, WebSocketConfig};
use ratchet_deflate::{Deflate, DeflateConfig, DeflateExtProvider};
use tokio::net::TcpStream;
use tokio::sync::mpsc;

type Sender = ratchet_core::Sender<TcpStream, <Deflate as ratchet_ext::SplittableExtension>::SplitEncoder>;

/// What the reading task saw.
#[derive(Debug)]
pub enum Got {
    Text(String),
    Binary,
    /// The peer's close frame: its code and reason, if it had any.
    Close(Option<(u16, String)>),
    /// The connection ended without a close frame (or broke).
    Ended,
}

pub struct Client {
    sender: Sender,
    received: mpsc::UnboundedReceiver<Got>,
    /// The reading task holds the connection's read half: dropping the
    /// client must end it, or the connection would outlive it.
    reader: tokio::task::AbortHandle,
}

impl Drop for Client {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl Client {
    pub async fn connect(url: &str) -> Result<Client, ratchet_core::Error> {
        let authority = url.split("://").nth(1).and_then(|rest| rest.split('/').next()).expect("a ws:// URL");
        let tcp = TcpStream::connect(authority).await?;
        // Both windows kept, nothing asked of the server: ratchet then
        // offers exactly what browsers offer.
        let offer = DeflateConfig {
            request_server_no_context_takeover: false,
            request_client_no_context_takeover: false,
            ..DeflateConfig::default()
        };
        let provider = DeflateExtProvider::with_config(offer);
        let upgraded = ratchet_core::subscribe_with(
            WebSocketConfig::default(),
            tcp,
            url,
            provider,
            SubprotocolRegistry::default(),
        )
        .await?;
        let (sender, mut receiver) = upgraded.websocket.split()?;
        let (seen, received) = mpsc::unbounded_channel();
        let reader = tokio::spawn(async move {
            let mut buf = BytesMut::new();
            loop {
                let got = match receiver.read(&mut buf).await {
                    Ok(Message::Text) => Got::Text(String::from_utf8(buf.split().to_vec()).expect("UTF-8 text")),
                    Ok(Message::Binary) => {
                        buf.clear();
                        Got::Binary
                    }
                    Ok(Message::Ping(_) | Message::Pong(_)) => continue,
                    Ok(Message::Close(reason)) => {
                        Got::Close(reason.map(|r| (u16::from(r.code), r.description.unwrap_or_default())))
                    }
                    Err(_) => Got::Ended,
                };
                let last = matches!(got, Got::Close(_) | Got::Ended);
                if seen.send(got).is_err() || last {
                    return;
                }
            }
        })
        .abort_handle();
        Ok(Client { sender, received, reader })
    }

    pub async fn send_text(&mut self, text: &str) {
        self.sender.write_text(text).await.expect("the connection takes a message");
    }

    pub async fn send_binary(&mut self, bytes: &[u8]) {
        self.sender.write_binary(bytes).await.expect("the connection takes a message");
    }

    /// The next thing read; `Ended` once nothing more will come.
    pub async fn next(&mut self) -> Got {
        self.received.recv().await.unwrap_or(Got::Ended)
    }

    /// Sends a close frame and waits (briefly) for the peer's reply.
    pub async fn close(mut self) {
        let _ = self.sender.close(CloseReason::new(CloseCode::Normal, None)).await;
        let _ = tokio::time::timeout(std::time::Duration::from_secs(2), async {
            while !matches!(self.next().await, Got::Close(_) | Got::Ended) {}
        })
        .await;
    }
}
