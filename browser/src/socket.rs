//! One WebSocket, with its handlers turned into [`SocketEvent`]s.
//!
//! The socket is a web-sys `WebSocket`: the global constructor, or one the
//! application passed (Node's `ws` package has the same surface). The URL
//! holds the access token, so it is handed to the constructor and nowhere
//! else: exceptions from the constructor are replaced by a fixed message
//! because browsers quote the URL in them.

use std::rc::Rc;

use aep_engine::client::{sendable_close_code, CLOSE_ABNORMAL, CLOSE_NORMAL};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use web_sys::{BinaryType, CloseEvent, MessageEvent, WebSocket};

/// What happened on a socket.
pub enum SocketEvent {
    Open,
    Text(String),
    Binary(Vec<u8>),
    Closed { code: u16, reason: String },
}

type Handler = Closure<dyn FnMut(JsValue)>;

/// An open (or opening) socket. Dropping it detaches the handlers first,
/// so nothing from it is reported afterwards.
pub struct Socket {
    ws: WebSocket,
    _handlers: [Handler; 4],
}

/// Why a socket could not be created.
pub const OPEN_FAILED: &str = "the WebSocket could not be created";

impl Socket {
    pub fn open(
        url: &str,
        ctor: Option<&js_sys::Function>,
        report: Rc<dyn Fn(SocketEvent)>,
    ) -> Result<Socket, &'static str> {
        let ws: WebSocket = match ctor {
            Some(c) => {
                let args = js_sys::Array::of1(&JsValue::from_str(url));
                js_sys::Reflect::construct(c, &args).map_err(|_| OPEN_FAILED)?.unchecked_into()
            }
            None => WebSocket::new(url).map_err(|_| OPEN_FAILED)?,
        };
        ws.set_binary_type(BinaryType::Arraybuffer);
        let r = report.clone();
        let on_open = Closure::<dyn FnMut(JsValue)>::new(move |_| r(SocketEvent::Open));
        let r = report.clone();
        let on_message = Closure::<dyn FnMut(JsValue)>::new(move |e: JsValue| {
            let data = e.unchecked_into::<MessageEvent>().data();
            if let Some(text) = data.as_string() {
                r(SocketEvent::Text(text));
            } else if data.is_instance_of::<js_sys::ArrayBuffer>() {
                r(SocketEvent::Binary(js_sys::Uint8Array::new(&data).to_vec()));
            } else if data.is_instance_of::<js_sys::Uint8Array>() {
                r(SocketEvent::Binary(data.unchecked_into::<js_sys::Uint8Array>().to_vec()));
            } else {
                r(SocketEvent::Binary(Vec::new()));
            }
        });
        let r = report.clone();
        let on_close = Closure::<dyn FnMut(JsValue)>::new(move |e: JsValue| {
            let e = e.unchecked_into::<CloseEvent>();
            r(SocketEvent::Closed { code: e.code(), reason: e.reason() });
        });
        // Some runtimes (Node's undici after a refused upgrade) fire no
        // close after an error, so the error counts as the close; a close
        // that does follow is then ignored as stale.
        let r = report;
        let on_error = Closure::<dyn FnMut(JsValue)>::new(move |_| {
            r(SocketEvent::Closed { code: CLOSE_ABNORMAL, reason: "connection error".into() })
        });
        ws.set_onopen(Some(on_open.as_ref().unchecked_ref()));
        ws.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
        ws.set_onclose(Some(on_close.as_ref().unchecked_ref()));
        ws.set_onerror(Some(on_error.as_ref().unchecked_ref()));
        Ok(Socket { ws, _handlers: [on_open, on_message, on_close, on_error] })
    }

    /// Writes one text frame; `false` when the socket refused it.
    pub fn send(&self, text: &str) -> bool {
        self.ws.send_with_str(text).is_ok()
    }

    /// Closes with `code` ([`CLOSE_NORMAL`] instead of one an application
    /// may not send) and a reason cut to the 123 bytes a close frame holds.
    pub fn close(self, code: u16, reason: &str) {
        let code = if sendable_close_code(code) { code } else { CLOSE_NORMAL };
        let mut cut = reason.len().min(123);
        while !reason.is_char_boundary(cut) {
            cut -= 1;
        }
        let _ = self.ws.close_with_code_and_reason(code, &reason[..cut]);
    }
}

impl Drop for Socket {
    fn drop(&mut self) {
        self.ws.set_onopen(None);
        self.ws.set_onmessage(None);
        self.ws.set_onclose(None);
        self.ws.set_onerror(None);
    }
}
