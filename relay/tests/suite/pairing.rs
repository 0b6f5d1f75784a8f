//! A phone pairs with the relay as its own principal: `aep-relay pair`
//! prints a one-tap link and the same link as a QR code, the running relay
//! takes the new device at once, and `aep-relay unpair` cuts off that
//! device alone. Tried with the real binary, a real relay process and real
//! sockets; the QR code is read back by a decoder.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use aep_relay::auth::token_hash;
use aep_relay::cli::Cli;
use clap::Parser;
use serde_json::{json, Value};
use support::*;

/// `aep-relay ARGS` with none of the relay's environment variables.
fn aep_relay(args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_aep-relay"));
    command.args(args);
    for var in ["AEP_TOKEN", "AEP_TOKEN_FILE", "AEP_CREDENTIALS", "AEP_PUBLIC_URL", "AEP_LISTEN"] {
        command.env_remove(var);
    }
    command.output().unwrap()
}

fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("aep-pair-{}", fresh_id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("credentials")
}

/// What `pair` printed: the link on a line of its own and the QR code.
struct Printed {
    link: String,
    token: String,
    qr: String,
}

fn pair(file: &Path, name: &str, extra: &[&str]) -> Printed {
    let mut args = vec!["pair", "--name", name, "--credentials", file.to_str().unwrap()];
    args.extend_from_slice(extra);
    let out = aep_relay(&args);
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(out.status.success(), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    let link = stdout.lines().map(str::trim).find(|l| l.contains("#token=")).expect(&stdout).to_owned();
    let token = link.split("#token=").nth(1).unwrap().to_owned();
    let is_code = |l: &&str| !l.trim().is_empty() && l.chars().all(|c| matches!(c, ' ' | '▀' | '▄' | '█'));
    let qr: Vec<&str> = stdout.lines().filter(is_code).collect();
    Printed { link, token, qr: qr.join("\n") }
}

/// Reads a half-block QR code back: each character is two modules, the
/// drawn half light; the code is as tall as it is wide.
fn decode(qr: &str) -> String {
    let rows: Vec<Vec<char>> = qr.lines().map(|l| l.chars().collect()).collect();
    let width = rows[0].len();
    let light = |x: usize, y: usize| {
        let c = rows[y / 2][x];
        if y.is_multiple_of(2) {
            matches!(c, '▀' | '█')
        } else {
            matches!(c, '▄' | '█')
        }
    };
    const SCALE: usize = 4;
    let mut image = rqrr::PreparedImage::prepare_from_greyscale(width * SCALE, width * SCALE, |x, y| {
        if light(x / SCALE, y / SCALE) {
            255
        } else {
            0
        }
    });
    let grids = image.detect_grids();
    assert_eq!(grids.len(), 1, "one code in:\n{qr}");
    grids[0].decode().expect("a readable code").1
}

/// A console's socket for `token`, and the principal the relay's `hello`
/// says it belongs to.
async fn device(relay: &RelayProcess, token: &str) -> (Ws, Value) {
    let mut ws = Ws::connect(&format!("ws://{}/socket?access_token={token}", relay.addr)).await.unwrap();
    ws.send(&json!({"type": "hello", "versions": ["0.1"], "role": "consumer"})).await;
    let hello = ws.recv_json().await;
    assert_eq!(hello["type"], "hello", "{hello}");
    (ws, hello["capabilities"]["experimental"]["principal"].clone())
}

/// Whether the socket still answers.
async fn answers(ws: &mut Ws) -> bool {
    ws.send(&json!({"type": "ping", "t": "still-there"})).await;
    matches!(ws.recv_json_within(PROMPT).await, Some(v) if v["type"] == "pong" && v["t"] == "still-there")
}

#[tokio::test]
async fn paired_devices_are_their_own_principals_and_one_unpaired_is_cut_off_alone() {
    let file = scratch();
    let phone = pair(&file, "phone", &[]);
    assert!(phone.link.starts_with("http://127.0.0.1:8787/#token="), "{}", phone.link);
    assert_eq!(phone.token.len(), 32);
    let relay = RelayProcess::start(&["--credentials", file.to_str().unwrap()]);
    assert_eq!(relay.status_for(&phone.token).await, 200);

    // Paired while the relay runs: taken without a restart.
    let tablet = pair(&file, "tablet", &["--role", "viewer"]);
    let text = std::fs::read_to_string(&file).unwrap();
    assert_eq!(
        text,
        format!("phone operator,viewer {}\ntablet viewer {}\n", token_hash(&phone.token), token_hash(&tablet.token))
    );
    let deadline = tokio::time::Instant::now() + PROMPT;
    while relay.status_for(&tablet.token).await != 200 {
        assert!(tokio::time::Instant::now() < deadline, "the running relay never took the new device");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    let (mut phone_ws, principal) = device(&relay, &phone.token).await;
    assert_eq!(principal, json!({"name": "phone", "roles": ["operator", "viewer"]}));
    let (mut tablet_ws, principal) = device(&relay, &tablet.token).await;
    assert_eq!(principal, json!({"name": "tablet", "roles": ["viewer"]}));

    let out = aep_relay(&["unpair", "phone", "--credentials", file.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let closed = loop {
        match phone_ws.recv(PROMPT).await {
            Some(Incoming::Closed(code)) => break code,
            Some(_) => continue,
            None => panic!("the unpaired device's socket stays open"),
        }
    };
    assert_eq!(closed, Some(1008));
    assert_eq!(relay.status_for(&phone.token).await, 401);
    assert_eq!(relay.status_for(&tablet.token).await, 200, "the other device is still accepted");
    assert!(answers(&mut tablet_ws).await, "the other device's socket stays open");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), format!("tablet viewer {}\n", token_hash(&tablet.token)));
}

#[tokio::test]
async fn the_printed_code_reads_as_the_printed_link() {
    let file = scratch();
    let printed = pair(&file, "phone", &["--public-url", "https://laptop.tailnet.ts.net"]);
    assert_eq!(printed.link, format!("https://laptop.tailnet.ts.net/#token={}", printed.token));
    assert_eq!(decode(&printed.qr), printed.link);
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(!text.contains(&printed.token), "the token is never stored in clear");
}

#[test]
fn refusals_say_why_exit_non_zero_and_leave_the_file_alone() {
    let file = scratch();
    let path = file.to_str().unwrap();
    pair(&file, "phone", &[]);
    let before = std::fs::read(&file).unwrap();
    for (args, why) in [
        (vec!["pair", "--name", "phone", "--credentials", path], "already paired"),
        (vec!["pair", "--name", "my phone", "--credentials", path], "not a device name"),
        (vec!["pair", "--name", "tablet", "--credentials", path, "--public-url", "https://x.example/app"], "no path"),
        (vec!["unpair", "laptop", "--credentials", path], "no device named `laptop`"),
    ] {
        let out = aep_relay(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && stderr.contains(why), "{args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "{args:?} printed a link");
    }
    assert_eq!(std::fs::read(&file).unwrap(), before);
}

/// Behind a TLS-terminating proxy the browser names the public address;
/// the loopback relay serves it, and still no other name.
#[tokio::test]
async fn a_public_url_passes_the_host_and_origin_checks_and_other_names_do_not() {
    let relay = RelayProcess::start(&["--token", TOKEN, "--public-url", "https://relay.example:8443"]);
    let client = reqwest::Client::new();
    let get = |host: &str, origin: Option<&str>| {
        let mut request = client.get(format!("{}/events", relay.base())).bearer_auth(TOKEN).header("host", host);
        if let Some(origin) = origin {
            request = request.header("origin", origin);
        }
        request.send()
    };
    let public = Some("https://relay.example:8443");
    assert_eq!(get("relay.example:8443", public).await.unwrap().status(), 200);
    assert_eq!(get(&relay.addr, public).await.unwrap().status(), 200, "a proxy that rewrites the Host");
    assert_eq!(get("attacker.example:8443", None).await.unwrap().status(), 403);
    for foreign in ["https://attacker.example", "https://relay.example", "http://relay.example:8443"] {
        assert_eq!(get(&relay.addr, Some(foreign)).await.unwrap().status(), 403, "{foreign}");
    }
}

#[test]
fn the_boot_line_links_the_first_public_url() {
    let cli =
        Cli::try_parse_from(["aep-relay", "--public-url", "https://laptop.tailnet.ts.net,https://relay.example:8443"])
            .unwrap();
    let line = aep_relay::boot_line(&cli.config().unwrap(), "127.0.0.1:8787".parse().unwrap());
    assert!(line.contains("listening on http://127.0.0.1:8787"), "{line}");
    assert!(line.contains("at https://laptop.tailnet.ts.net/"), "{line}");
    assert!(!line.contains("relay.example"), "{line}");
}
