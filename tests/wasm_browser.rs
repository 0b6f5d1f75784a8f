//! The JavaScript API in headless Chromium (wasm-bindgen-test): the
//! browser's own WebSocket against the real relay started by
//! `scripts/test-npm`.

#![cfg(target_arch = "wasm32")]

#[path = "wasm_support/mod.rs"]
mod support;

use wasm_bindgen_test::{wasm_bindgen_test, wasm_bindgen_test_configure};

wasm_bindgen_test_configure!(run_in_browser);

#[wasm_bindgen_test]
async fn answers_a_permission_request_through_the_relay() {
    support::answer_a_permission_request("browser-answer").await;
}

#[wasm_bindgen_test]
async fn a_rejected_answer_and_an_unrouted_command_reject() {
    support::a_rejected_answer_is_a_nack_error("browser-reject").await;
}
