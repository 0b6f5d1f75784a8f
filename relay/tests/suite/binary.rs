//! The `aep-relay` binary: the boot line states the posture and never the
//! token, the options are honoured, and SIGTERM shuts it down cleanly.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

struct Running {
    child: Child,
    boot: String,
    base: String,
}

fn start(args: &[&str], env: &[(&str, &str)]) -> Running {
    let mut command = Command::new(env!("CARGO_BIN_EXE_aep-relay"));
    command.args(["--listen", "127.0.0.1:0", "--static-dir", "/nonexistent-console"]).args(args);
    command.env_remove("AEP_TOKEN").stdout(Stdio::piped()).stderr(Stdio::null());
    for (k, v) in env {
        command.env(k, v);
    }
    let mut child = command.spawn().unwrap();
    let mut boot = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut boot).unwrap();
    let addr = boot.split("listening on http://").nth(1).unwrap().split_whitespace().next().unwrap().to_owned();
    Running { child, boot, base: format!("http://{addr}") }
}

fn terminate(mut r: Running) -> std::process::ExitStatus {
    Command::new("kill").args(["-TERM", &r.child.id().to_string()]).status().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(status) = r.child.try_wait().unwrap() {
            return status;
        }
        assert!(Instant::now() < deadline, "no exit after SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[tokio::test]
async fn token_posture_boot_line_and_clean_sigterm() {
    let r = start(&["--token", "sekrit-value", "--buffer", "33"], &[]);
    assert!(r.boot.contains("control ON"), "{}", r.boot);
    assert!(!r.boot.contains("sekrit-value"), "the token is never printed");
    let http = reqwest::Client::new();
    assert_eq!(http.get(format!("{}/events", r.base)).send().await.unwrap().status(), 401);
    let doc: Value =
        http.get(format!("{}/events", r.base)).bearer_auth("sekrit-value").send().await.unwrap().json().await.unwrap();
    assert_eq!(doc["capabilities"]["replay"]["buffer"], 33);
    assert!(terminate(r).success());
}

#[tokio::test]
async fn open_posture_and_the_token_from_the_environment() {
    let open = start(&[], &[]);
    assert!(open.boot.contains("control OFF"), "{}", open.boot);
    assert!(open.boot.contains("development posture"));
    let page = reqwest::get(format!("{}/", open.base)).await.unwrap().text().await.unwrap();
    assert!(page.contains("AEP relay is running"));
    assert!(terminate(open).success());

    let from_env = start(&[], &[("AEP_TOKEN", "env-token-value")]);
    assert!(from_env.boot.contains("control ON"));
    assert!(!from_env.boot.contains("env-token-value"));
    assert!(terminate(from_env).success());
}

#[test]
fn refuses_an_empty_token() {
    let out = Command::new(env!("CARGO_BIN_EXE_aep-relay"))
        .args(["--listen", "127.0.0.1:0", "--token", ""])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--token is empty"));
}

/// Off-host without a token would serve anyone on the network: the relay
/// refuses to start unless told `--insecure`, and says why.
#[test]
fn refuses_an_off_host_address_without_a_token() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_aep-relay"))
        .args(["--listen", "0.0.0.0:0", "--static-dir", "/nonexistent-console"])
        .env_remove("AEP_TOKEN")
        .env_remove("AEP_INSECURE")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("the relay started serving 0.0.0.0 without a token");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(2), "must not start: {stderr}");
    assert!(stderr.contains("0.0.0.0") && stderr.contains("--token") && stderr.contains("--insecure"), "{stderr}");
    assert!(stderr.contains("AEP-0003 §8.1"), "says why: {stderr}");
}

/// Off-host with a token but without TLS would hand the token to anyone
/// on the network: refused too, unless told `--insecure`.
#[test]
fn refuses_an_off_host_address_without_tls() {
    let out = Command::new(env!("CARGO_BIN_EXE_aep-relay"))
        .args(["--listen", "0.0.0.0:0", "--static-dir", "/nonexistent-console", "--token", "off-host-token"])
        .env_remove("AEP_INSECURE")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "must not start: {stderr}");
    for words in ["without TLS", "--tls-cert", "--public-url", "--insecure"] {
        assert!(stderr.contains(words), "names {words}: {stderr}");
    }
}

#[tokio::test]
async fn an_off_host_address_without_tls_starts_when_told_insecure() {
    // The boot line says what crosses the network in clear.
    let warned = [
        (
            &["--token", "off-host-token", "--insecure"][..],
            "WARNING no TLS: plain HTTP off-host, so tokens and commands cross the network in clear",
        ),
        (&["--insecure"][..], "no TLS: plain HTTP off-host, events cross the network in clear"),
    ];
    for (args, warning) in warned {
        let mut command = Command::new(env!("CARGO_BIN_EXE_aep-relay"));
        command.args(["--listen", "0.0.0.0:0", "--static-dir", "/nonexistent-console"]).args(args);
        command.env_remove("AEP_TOKEN").stdout(Stdio::piped()).stderr(Stdio::null());
        let mut child = command.spawn().unwrap();
        let mut boot = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut boot).unwrap();
        assert!(boot.contains("listening on http://0.0.0.0:"), "{args:?}: {boot}");
        assert!(boot.contains(warning), "{args:?}: {boot}");
        let port = boot.split("0.0.0.0:").nth(1).unwrap().split_whitespace().next().unwrap().to_owned();
        let status = reqwest::get(format!("http://127.0.0.1:{port}/healthz")).await.unwrap().status();
        assert!(status.is_success() || status == 401, "{args:?}: {status}");
        let r = Running { child, boot, base: String::new() };
        assert!(terminate(r).success());
    }
}
