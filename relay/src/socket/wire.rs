//! One upgraded connection, whichever WebSocket stack carries it: axum's
//! for peers that offer no extension, the compressing one
//! ([`super::deflate`]) for peers that offer permessage-deflate. Both speak
//! axum's [`Message`], so the run loop, the handshake and the writer are the
//! same code for either.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::extract::ws::{Message, WebSocket};
use futures_util::{Sink, Stream};

use super::compress::Shared;
use super::deflate::Compressed;

pub enum Wire {
    Plain(WebSocket),
    Compressed(Compressed),
}

/// What the writer hands a connection: a message, or a live event whose
/// compressed form every compressed connection it goes to shares
/// ([`Shared`]); a plain connection sends its text.
pub enum Outbound {
    Message(Message),
    Live { text: Arc<str>, shared: Arc<Shared> },
}

impl From<Message> for Outbound {
    fn from(message: Message) -> Outbound {
        Outbound::Message(message)
    }
}

impl Stream for Wire {
    type Item = Result<Message, axum::Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        match self.get_mut() {
            Wire::Plain(ws) => Pin::new(ws).poll_next(cx),
            Wire::Compressed(ws) => Pin::new(ws).poll_next(cx),
        }
    }
}

impl Sink<Outbound> for Wire {
    type Error = axum::Error;

    fn poll_ready(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        match self.get_mut() {
            Wire::Plain(ws) => Pin::new(ws).poll_ready(cx),
            Wire::Compressed(ws) => Pin::new(ws).poll_ready(cx),
        }
    }

    fn start_send(self: Pin<&mut Self>, item: Outbound) -> Result<(), Self::Error> {
        match self.get_mut() {
            Wire::Plain(ws) => Pin::new(ws).start_send(match item {
                Outbound::Message(message) => message,
                Outbound::Live { text, .. } => Message::Text((&*text).into()),
            }),
            Wire::Compressed(ws) => Pin::new(ws).start_send(item),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        match self.get_mut() {
            Wire::Plain(ws) => Pin::new(ws).poll_flush(cx),
            Wire::Compressed(ws) => Pin::new(ws).poll_flush(cx),
        }
    }

    fn poll_close(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        match self.get_mut() {
            Wire::Plain(ws) => Pin::new(ws).poll_close(cx),
            Wire::Compressed(ws) => Pin::new(ws).poll_close(cx),
        }
    }
}
