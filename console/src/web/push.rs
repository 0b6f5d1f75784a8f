//! Web Push on this device: the service worker (`sw.js`, which shows the
//! relay's pushes and answers from them), the browser's push
//! subscription, and the relay's `/push/*` endpoints, called with the
//! token of the relay that served the page. What the switch says is in
//! [`crate::model::push`].

use gloo_net::http::{Request, RequestBuilder};
use serde_json::Value;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{
    Notification, NotificationOptions, NotificationPermission, PushSubscription, PushSubscriptionOptionsInit,
    ServiceWorkerContainer, ServiceWorkerRegistration,
};

use super::platform::window;
use crate::model::push::{Facts, Permission};

/// The worker, beside `index.html` (its scope is the console's directory).
const WORKER: &str = "sw.js";
const KEY_PATH: &str = "/push/key";
const SUBSCRIPTIONS_PATH: &str = "/push/subscriptions";

fn has(obj: &JsValue, name: &str) -> bool {
    js_sys::Reflect::has(obj, &name.into()).unwrap_or(false)
}

fn container() -> Option<ServiceWorkerContainer> {
    let nav = window().navigator();
    has(&nav, "serviceWorker").then(|| nav.service_worker())
}

/// A browser error in words (a `DOMException`'s message).
fn words(e: JsValue) -> String {
    js_sys::Reflect::get(&e, &"message".into())
        .ok()
        .and_then(|m| m.as_string())
        .filter(|m| !m.is_empty())
        .or_else(|| e.as_string())
        .unwrap_or_else(|| "the browser refused".into())
}

async fn settle(promise: Result<js_sys::Promise, JsValue>) -> Result<JsValue, String> {
    JsFuture::from(promise.map_err(words)?).await.map_err(words)
}

/// What the browser offers now; `subscribed` from [`subscription`].
pub fn facts(subscribed: bool) -> Facts {
    let win = window();
    let nav = win.navigator();
    let agent = nav.user_agent().unwrap_or_default();
    // iPadOS says it is a Mac; a Mac has no touch points.
    let ios = agent.contains("iPhone")
        || agent.contains("iPad")
        || (agent.contains("Macintosh") && nav.max_touch_points() > 1);
    let standalone = win.match_media("(display-mode: standalone)").ok().flatten().is_some_and(|m| m.matches())
        || js_sys::Reflect::get(&nav, &"standalone".into()).ok().and_then(|v| v.as_bool()).unwrap_or(false);
    Facts {
        secure: super::platform::secure_context(),
        service_worker: container().is_some(),
        push_manager: has(&win, "PushManager"),
        notifications: super::notify::supported(),
        ios,
        standalone,
        permission: permission(),
        subscribed,
        wanted: super::storage::notify_wanted(),
    }
}

fn permission() -> Permission {
    if !super::notify::supported() {
        return Permission::Ask;
    }
    match Notification::permission() {
        NotificationPermission::Granted => Permission::Granted,
        NotificationPermission::Denied => Permission::Denied,
        _ => Permission::Ask,
    }
}

/// Registers the worker. It caches nothing, so registering it on every
/// start costs one small revalidated request.
pub async fn register() -> Result<ServiceWorkerRegistration, String> {
    let c = container().ok_or("this browser has no service workers")?;
    Ok(JsFuture::from(c.register(WORKER)).await.map_err(words)?.unchecked_into())
}

/// The worker's registration, once it is active.
async fn ready() -> Result<ServiceWorkerRegistration, String> {
    let c = container().ok_or("this browser has no service workers")?;
    Ok(settle(c.ready()).await?.unchecked_into())
}

/// The worker's registration, if there is one.
pub async fn registration() -> Option<ServiceWorkerRegistration> {
    let found = JsFuture::from(container()?.get_registration()).await.ok()?;
    (!found.is_undefined() && !found.is_null()).then(|| found.unchecked_into())
}

/// The registration once its worker is active (`navigator.serviceWorker
/// .ready`); only asked for when one is registered, as it never settles
/// otherwise.
async fn active_registration() -> Option<ServiceWorkerRegistration> {
    let ready = container()?.ready().ok()?;
    JsFuture::from(ready).await.ok().map(JsCast::unchecked_into)
}

/// This browser's push subscription, if it holds one.
pub async fn subscription() -> Option<PushSubscription> {
    let manager = registration().await?.push_manager().ok()?;
    let found = settle(manager.get_subscription()).await.ok()?;
    (!found.is_undefined() && !found.is_null()).then(|| found.unchecked_into())
}

/// Sends `request` to the page's relay; its JSON, or the relay's reason.
pub(super) async fn call(request: Result<Request, gloo_net::Error>) -> Result<Value, String> {
    let response = request
        .map_err(|e| e.to_string())?
        .send()
        .await
        .map_err(|e| format!("the relay could not be reached ({e})"))?;
    let body: Value = serde_json::from_str(&response.text().await.unwrap_or_default()).unwrap_or(Value::Null);
    if response.ok() {
        return Ok(body);
    }
    Err(body
        .get("detail")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .unwrap_or_else(|| format!("the relay answered {}", response.status())))
}

pub(super) fn authorized(builder: RequestBuilder, token: &str) -> RequestBuilder {
    builder.header("authorization", &format!("Bearer {token}"))
}

pub(super) fn with_json(builder: RequestBuilder, token: &str, body: String) -> Result<Request, gloo_net::Error> {
    authorized(builder, token).header("content-type", "application/json").body(body)
}

/// Turns push on: the worker, the browser's permission, a subscription
/// under the relay's key, registered with the relay for this principal.
pub async fn turn_on(token: Option<&str>) -> Result<(), String> {
    register().await?;
    if !super::notify::ask().await {
        return Err("the browser did not allow notifications".into());
    }
    // Notified while the console is open from here on, whatever becomes
    // of the subscription below.
    super::storage::set_notify_wanted(true);
    let token = token.ok_or("this console is not connected to the relay that served it, which sends them")?;
    let key = call(authorized(Request::get(KEY_PATH), token).build()).await?;
    let key = key.get("publicKey").and_then(Value::as_str).ok_or("the relay sent no push key")?.to_owned();
    // A subscription made before (perhaps under another relay key) is
    // replaced, so the relay holds exactly this one.
    if let Some(old) = subscription().await {
        let _ = forget(token, &old.endpoint()).await;
        let _ = settle(old.unsubscribe()).await;
    }
    let options = PushSubscriptionOptionsInit::new();
    options.set_user_visible_only(true);
    options.set_application_server_key_opt_str(Some(&key));
    let manager = ready().await?.push_manager().map_err(words)?;
    let made = settle(manager.subscribe_with_options(&options)).await?;
    let offered = js_sys::JSON::stringify(&made).map(String::from).map_err(words)?;
    call(with_json(Request::post(SUBSCRIPTIONS_PATH), token, offered)).await?;
    Ok(())
}

/// Turns notifications off: the browser forgets the subscription, the
/// relay the device.
pub async fn turn_off(token: Option<&str>) -> Result<(), String> {
    super::storage::set_notify_wanted(false);
    let Some(current) = subscription().await else { return Ok(()) };
    let endpoint = current.endpoint();
    settle(current.unsubscribe()).await?;
    let Some(token) = token else { return Ok(()) };
    forget(token, &endpoint).await.or_else(|e| if e.contains("no subscription") { Ok(()) } else { Err(e) })
}

/// The principal's registered devices: (principal, endpoints).
pub async fn devices(token: &str) -> Result<(String, Vec<String>), String> {
    let listed = call(authorized(Request::get(SUBSCRIPTIONS_PATH), token).build()).await?;
    let principal = listed.get("principal").and_then(Value::as_str).unwrap_or_default().to_owned();
    let endpoints = listed
        .get("subscriptions")
        .and_then(Value::as_array)
        .map(|l| l.iter().filter_map(|d| d.get("endpoint")?.as_str().map(str::to_owned)).collect())
        .unwrap_or_default();
    Ok((principal, endpoints))
}

/// Removes one of the principal's devices from the relay.
pub async fn forget(token: &str, endpoint: &str) -> Result<(), String> {
    let body = serde_json::json!({ "endpoint": endpoint }).to_string();
    call(with_json(Request::delete(SUBSCRIPTIONS_PATH), token, body)).await.map(|_| ())
}

/// Shows a notification through the worker (the only way Android
/// Chrome allows), else with the page's own `Notification`. A worker just
/// registered (as opting in does) shows nothing until it is active, so
/// that is waited for.
pub async fn show(title: &str, options: &NotificationOptions) -> Result<(), String> {
    if registration().await.is_some() {
        if let Some(reg) = active_registration().await {
            return settle(reg.show_notification_with_options(title, options)).await.map(|_| ());
        }
    }
    Notification::new_with_options(title, options).map(|_| ()).map_err(words)
}

/// A notification that says this device is reached.
pub async fn test_notification() -> Result<(), String> {
    let options = NotificationOptions::new();
    options.set_body("Notifications reach this device: it is told when an agent asks.");
    options.set_tag("aep-test");
    show("AEP console", &options).await
}

/// Calls `open(request)` whenever the worker asks a console window to
/// show a request (a tap on its notification), for the page's life.
pub fn on_open_request(open: impl Fn(String) + 'static) {
    let Some(c) = container() else { return };
    let listener = Closure::<dyn Fn(web_sys::MessageEvent)>::new(move |m: web_sys::MessageEvent| {
        let data = m.data();
        let kind = js_sys::Reflect::get(&data, &"kind".into()).ok().and_then(|v| v.as_string());
        let request = js_sys::Reflect::get(&data, &"request".into()).ok().and_then(|v| v.as_string());
        if let (Some("open"), Some(request)) = (kind.as_deref(), request) {
            open(request);
        }
    });
    let _ = c.add_event_listener_with_callback("message", listener.as_ref().unchecked_ref());
    listener.forget();
}
