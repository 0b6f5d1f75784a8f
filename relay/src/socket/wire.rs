//! One upgraded connection, whichever WebSocket stack carries it: axum's
//! for peers that offer no extension, the compressing one
//! ([`super::deflate`]) for peers that offer permessage-deflate. Both speak
//! axum's [`Message`], so the run loop, the handshake and the writer are the
//! same code for either.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::extract::ws::{Message, WebSocket};
use futures_util::{Sink, Stream};

use super::compress::Shared;
use super::deflate::Compressed;

pub enum Wire {
    /// The socket, and the texts of a batch not yet handed to it.
    Plain(WebSocket, VecDeque<Arc<str>>),
    Compressed(Compressed),
}

impl Wire {
    pub fn plain(socket: WebSocket) -> Wire {
        Wire::Plain(socket, VecDeque::new())
    }
}

/// What the writer hands a connection: a message; a live event whose
/// compressed form every compressed connection it goes to shares
/// ([`Shared`]); or a replay's messages, which a compressed connection
/// deflates in one go with one window across them. A plain connection
/// sends the texts.
pub enum Outbound {
    Message(Message),
    Live { text: Arc<str>, shared: Arc<Shared> },
    Batch(Vec<Arc<str>>),
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
            Wire::Plain(ws, _) => Pin::new(ws).poll_next(cx),
            Wire::Compressed(ws) => Pin::new(ws).poll_next(cx),
        }
    }
}

impl Sink<Outbound> for Wire {
    type Error = axum::Error;

    /// Ready once every message of an earlier batch is handed to the socket.
    fn poll_ready(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        match self.get_mut() {
            Wire::Plain(ws, pending) => {
                while !pending.is_empty() {
                    std::task::ready!(Pin::new(&mut *ws).poll_ready(cx))?;
                    let text = pending.pop_front().expect("not empty");
                    Pin::new(&mut *ws).start_send(Message::Text((&*text).into()))?;
                }
                Pin::new(ws).poll_ready(cx)
            }
            Wire::Compressed(ws) => Pin::new(ws).poll_ready(cx),
        }
    }

    fn start_send(self: Pin<&mut Self>, item: Outbound) -> Result<(), Self::Error> {
        match self.get_mut() {
            Wire::Plain(ws, pending) => match item {
                Outbound::Message(message) => Pin::new(ws).start_send(message),
                Outbound::Live { text, .. } => Pin::new(ws).start_send(Message::Text((&*text).into())),
                Outbound::Batch(texts) => {
                    pending.extend(texts);
                    Ok(())
                }
            },
            Wire::Compressed(ws) => Pin::new(ws).start_send(item),
        }
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        std::task::ready!(self.as_mut().poll_ready(cx))?;
        match self.get_mut() {
            Wire::Plain(ws, _) => Pin::new(ws).poll_flush(cx),
            Wire::Compressed(ws) => Pin::new(ws).poll_flush(cx),
        }
    }

    fn poll_close(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        std::task::ready!(self.as_mut().poll_ready(cx))?;
        match self.get_mut() {
            Wire::Plain(ws, _) => Pin::new(ws).poll_close(cx),
            Wire::Compressed(ws) => Pin::new(ws).poll_close(cx),
        }
    }
}
