//! Credentials as the binary takes them: a token file that keeps the token
//! out of the process list, and a credentials file of hashed tokens, each
//! naming a principal and its roles, reloaded when it changes so one can be
//! revoked without a restart.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use aep_relay::auth::token_hash;
use serde_json::json;
use support::*;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("aep-cred-{}", fresh_id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn write(path: &Path, text: &str) {
    // Written whole and renamed, as an editor saves.
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

/// The README's way of running: the token in a file, never an argument.
#[tokio::test]
async fn a_token_file_keeps_the_token_out_of_the_process_list() {
    let secret = format!("secret-{}", fresh_id());
    let file = scratch("relay.token");
    std::fs::write(&file, format!("{secret}\n")).unwrap();
    let relay = RelayProcess::start(&["--token-file", file.to_str().unwrap()]);
    let cmdline = std::fs::read(format!("/proc/{}/cmdline", relay.child.id())).unwrap();
    assert!(!String::from_utf8_lossy(&cmdline).contains(&secret), "the token is not on the command line");
    let ps = Command::new("ps").args(["-eo", "args"]).output().map(|o| String::from_utf8_lossy(&o.stdout).into_owned());
    if let Ok(ps) = ps {
        assert!(!ps.contains(&secret), "nor in the process list");
    }
    assert_eq!(relay.status_for(&secret).await, 200);
    assert_eq!(relay.status_for("wrong").await, 401);
}

#[tokio::test]
async fn a_credentials_file_names_roles_and_a_removed_line_is_revoked_without_a_restart() {
    let file = scratch("credentials");
    let (alice, bob) = (format!("alice-{}", fresh_id()), format!("bob-{}", fresh_id()));
    let both = format!(
        "# name  roles            sha256 of the token\nalice   operator,viewer  {}\nbob     viewer           sha256:{}\n",
        token_hash(&alice),
        token_hash(&bob)
    );
    write(&file, &both);
    assert!(!std::fs::read_to_string(&file).unwrap().contains(&alice), "the file holds hashes only");
    let relay = RelayProcess::start(&["--credentials", file.to_str().unwrap()]);
    assert_eq!(relay.status_for(&alice).await, 200);
    assert_eq!(relay.status_for(&bob).await, 200);

    // Bob watches from a socket; a viewer may not command.
    let mut socket = Ws::connect(&format!("ws://{}/socket?access_token={bob}", relay.addr)).await.unwrap();
    socket.send(&json!({"type": "hello", "versions": ["0.1"], "role": "consumer"})).await;
    assert_eq!(socket.recv_json().await["type"], "hello");
    let cmd = aep_engine::protocol::ids::Draft::new("control.pause")
        .session("s")
        .data(json!({}))
        .build(&aep_engine::protocol::ids::Identity::new("aep://h/agent/bob", "bob"), fresh_id(), now())
        .unwrap();
    socket.send_text(cmd.raw()).await;
    let refusal = socket.recv_json().await;
    assert_eq!((refusal["cause"].as_str(), refusal["code"].as_str()), (Some(cmd.id()), Some("unauthorized")));

    write(&file, &both.lines().filter(|l| !l.starts_with("bob")).collect::<Vec<_>>().join("\n"));
    let deadline = tokio::time::Instant::now() + PROMPT;
    while relay.status_for(&bob).await != 401 {
        assert!(tokio::time::Instant::now() < deadline, "bob was never revoked");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(relay.status_for(&alice).await, 200, "the others keep working");
    let closed = loop {
        match socket.recv(PROMPT).await {
            Some(Incoming::Closed(code)) => break code,
            Some(_) => continue,
            None => panic!("a revoked principal's socket stays open"),
        }
    };
    assert_eq!(closed, Some(1008));
}

/// With a credentials file only, the demonstration agents get a token of
/// their own for the run and emit under it; a viewer sees them.
#[tokio::test]
async fn the_demo_agents_run_under_their_own_credential() {
    let file = scratch("credentials");
    let viewer = format!("wall-{}", fresh_id());
    write(&file, &format!("wall viewer {}\n", token_hash(&viewer)));
    let relay = RelayProcess::start(&["--credentials", file.to_str().unwrap(), "--demo", "--demo-seed", "3"]);
    let client = reqwest::Client::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        let body = client
            .get(format!("http://{}/stream?live=0&from=all", relay.addr))
            .bearer_auth(&viewer)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        if body.contains("\"session.started\"") {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "no demo session appeared");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}
