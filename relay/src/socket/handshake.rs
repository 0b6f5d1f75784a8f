//! The `hello` exchange (AEP-0003 §4): the client speaks first, the relay
//! sends nothing before it, and anything but an acceptable `hello` (one
//! version in common, a defined role, an emitter naming its agent) is
//! answered with an `error` frame and then a close.

use std::time::Duration;

use aep_engine::protocol::frame::{codes, ErrorFrame, Frame, Hello};
use aep_engine::protocol::AEP_VERSION;
use axum::extract::ws::{CloseFrame, Message};
use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};
use tokio::sync::watch;

use super::{Outbound, Wire};
use crate::discovery::versions;

/// Close code for a broken handshake (protocol error).
const PROTOCOL_ERROR: u16 = 1002;

/// Waits for the peer's `hello`. `None` when the connection must end: the
/// refusal, if any, has been sent.
pub async fn await_hello(
    sink: &mut SplitSink<Wire, Outbound>,
    stream: &mut SplitStream<Wire>,
    limit: Duration,
    shutdown: &mut watch::Receiver<bool>,
) -> Option<Hello> {
    let first = tokio::select! {
        first = tokio::time::timeout(limit, first_data_message(stream)) => first,
        _ = shutdown.wait_for(|down| *down) => return None,
    };
    let refusal = match first {
        Err(_elapsed) => hello_required(format!("no hello within {} s", limit.as_secs())),
        Ok(None) => return None,
        Ok(Some(Message::Text(text))) => match Frame::decode(text.as_str()) {
            Ok(Frame::Hello(hello)) if hello.negotiate(&[AEP_VERSION]).is_some() => match hello.check_declarations() {
                Ok(()) => return Some(hello),
                Err(refused) => hello_required(format!("this hello cannot be accepted: {refused}")),
            },
            Ok(Frame::Hello(hello)) => ErrorFrame {
                versions: Some(versions()),
                ..ErrorFrame::new(
                    codes::VERSION_UNSUPPORTED,
                    Some(format!("offered {:?}; this relay speaks {AEP_VERSION}", hello.versions)),
                )
            },
            Ok(other) => hello_required(format!("the first frame must be `hello`, got `{}`", other.frame_type())),
            Err(e) => hello_required(format!("the first frame must be `hello`: {e}")),
        },
        Ok(Some(_binary)) => hello_required("the first frame must be a `hello` text frame".into()),
    };
    let reason = refusal.code.clone();
    let _ = sink.send(Message::Text(Frame::Error(refusal).encode().into()).into()).await;
    let _ = sink.send(Message::Close(Some(CloseFrame { code: PROTOCOL_ERROR, reason: reason.into() })).into()).await;
    None
}

fn hello_required(detail: String) -> ErrorFrame {
    ErrorFrame::new(codes::HELLO_REQUIRED, Some(detail))
}

/// The first text or binary message; `None` when the peer left first.
async fn first_data_message(stream: &mut SplitStream<Wire>) -> Option<Message> {
    loop {
        match stream.next().await? {
            Ok(Message::Ping(_) | Message::Pong(_)) => continue,
            Ok(Message::Close(_)) | Err(_) => return None,
            Ok(message) => return Some(message),
        }
    }
}
