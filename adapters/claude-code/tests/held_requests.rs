//! The adapter against a real relay, without Claude Code: hooks posted to
//! its endpoint as Claude Code posts them, answered by a console-side
//! socket. Two permission requests held at once in one session (parallel
//! tool calls) are independent: answered in the opposite order, each
//! answer reaches its own hook. Under one token, and under roles: the
//! adapter as agent `claude-code`, the phone as an operator.

use std::net::SocketAddr;
use std::time::Duration;

use aep_claude_code::daemon::{self, Options, Status};
use aep_claude_code::server;
use aep_engine::client::hub::socket_url;
use aep_engine::protocol::capture::{CaptureCeiling, RedactOptions};
use aep_engine::protocol::event::Capture;
use aep_relay::auth::{Principal, Roles, Token};
use aep_relay::{serve, Config};
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::sync::{mpsc, watch};
use tokio_tungstenite::tungstenite::Message;

const TOKEN: &str = "T-held-requests-0123";
const AGENT_TOKEN: &str = "T-claude-code-agent-0123";
const OPERATOR_TOKEN: &str = "T-phone-operator-0123";
const SESSION: &str = "0b9f1c6e-1111-4a2b-9c3d-5e6f7a8b9c0d";
const PROMPT: Duration = Duration::from_secs(10);

async fn post(hooks: SocketAddr, body: Value) -> Value {
    let url = format!("http://{hooks}{}", server::HOOK_PATH);
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    client.post(url).json(&body).send().await.unwrap().json().await.unwrap()
}

fn permission(command: &str) -> Value {
    json!({
        "hook_event_name": "PermissionRequest", "session_id": SESSION, "cwd": "/work/project",
        "permission_mode": "default", "tool_name": "Bash",
        "tool_input": { "command": command, "description": "a step" },
    })
}

#[tokio::test(flavor = "current_thread")]
async fn two_requests_held_at_once_are_answered_each_on_its_own() {
    let config = Config { token: Token::new(TOKEN), ..Config::default() };
    tokio::task::LocalSet::new().run_until(scenario(config, TOKEN, TOKEN)).await;
}

#[tokio::test(flavor = "current_thread")]
async fn under_roles_the_adapter_is_an_agent_and_the_phone_an_operator() {
    let mut config = Config::default();
    let add = |name: &str, token: &str, roles: Roles| (Token::new(token).unwrap(), Principal::named(name, roles));
    config.principals = vec![
        add("claude-code", AGENT_TOKEN, Roles { agent: true, ..Roles::default() }),
        add("phone", OPERATOR_TOKEN, Roles { operator: true, viewer: true, agent: false }),
    ];
    tokio::task::LocalSet::new().run_until(scenario(config, AGENT_TOKEN, OPERATOR_TOKEN)).await;
}

async fn scenario(config: Config, adapter_token: &str, phone_token: &str) {
    let relay = serve(config, tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap()).await.unwrap();
    let base = format!("http://{}", relay.local_addr());

    // The adapter: its agent on the relay, its hook endpoint on loopback.
    let (calls, inbox) = mpsc::unbounded_channel();
    let (status, mut watching) = watch::channel(Status::default());
    let options = Options {
        socket_url: socket_url(&base, Some(adapter_token)).unwrap(),
        attention_timeout: Duration::from_secs(60),
        ceiling: CaptureCeiling::uniform(Capture::Redacted),
        redaction: RedactOptions::default(),
        host: "test-host".into(),
    };
    tokio::task::spawn_local(daemon::run(options, inbox, status));
    let listener = server::bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let hooks = listener.local_addr().unwrap();
    let app = server::router(calls, watching.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });
    tokio::time::timeout(PROMPT, async {
        while !watching.borrow_and_update().live {
            watching.changed().await.unwrap();
        }
    })
    .await
    .expect("the adapter reaches the relay");

    // A phone watching the session.
    let (mut phone, _) = tokio_tungstenite::connect_async(socket_url(&base, Some(phone_token)).unwrap()).await.unwrap();
    let send = |v: Value| Message::text(v.to_string());
    phone.send(send(json!({"type": "hello", "versions": ["0.1"], "role": "consumer", "identity": {"agent": "phone"}, "capabilities": {}}))).await.unwrap();
    phone.send(send(json!({"type": "subscribe", "id": "all", "filter": {"session": SESSION}}))).await.unwrap();

    assert_eq!(post(hooks, json!({"hook_event_name": "UserPromptSubmit", "session_id": SESSION, "prompt_id": "turn-1", "prompt": "tidy up"})).await, json!({}));
    let first = tokio::spawn(post(hooks, permission("rm -rf build/")));
    let second = tokio::spawn(post(hooks, permission("git clean -fdx")));

    let mut asked: Vec<Value> = Vec::new();
    tokio::time::timeout(PROMPT, async {
        while asked.len() < 2 {
            let Some(Ok(Message::Text(text))) = phone.next().await else { panic!("the phone's socket closed") };
            let v: Value = serde_json::from_str(text.as_str()).unwrap();
            if v["type"] == "attention.requested" {
                asked.push(v);
            }
        }
    })
    .await
    .expect("both requests reach the phone");
    let id_of = |command: &str| {
        let e = asked
            .iter()
            .find(|e| e["data"]["prompt"] == format!("Bash: {command}"))
            .unwrap_or_else(|| panic!("{asked:?}"));
        assert_eq!(e["data"]["kind"], "permission");
        assert_eq!(e["run"], "turn-1");
        e["id"].as_str().unwrap().to_owned()
    };
    let (rm, clean) = (id_of("rm -rf build/"), id_of("git clean -fdx"));

    // Answered the other way round: the second first, in words.
    let respond = |n: u32, request: &str, answer: Value| {
        send(json!({
            "aep": "0.1", "id": format!("01J0000000000000000000000{n}"), "type": "control.attention.respond",
            "time": "2026-12-01T12:00:00Z", "source": "aep://phone/agent/phone", "agent": "phone",
            "session": SESSION, "subject": request, "cause": request, "data": {"answer": answer},
        }))
    };
    phone.send(respond(1, &clean, json!({"text": "keep the vendored files"}))).await.unwrap();
    phone.send(respond(2, &rm, json!({"option": "allow"}))).await.unwrap();

    let (first, second) = tokio::time::timeout(PROMPT, async { (first.await.unwrap(), second.await.unwrap()) })
        .await
        .expect("both hooks answered");
    assert_eq!(
        first,
        json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}})
    );
    assert_eq!(
        second,
        json!({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "deny", "message": "keep the vendored files"}}})
    );
}
