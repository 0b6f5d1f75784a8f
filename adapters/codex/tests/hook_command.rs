//! The hook command when the adapter is not running: Codex must carry on
//! as without the hook, so it prints no decision and succeeds, and says
//! why on stderr.

use std::io::Write;
use std::process::{Command, Stdio};

#[test]
fn with_no_adapter_the_hook_prints_no_decision_and_succeeds() {
    // A port nothing listens on: bound, then let go.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_aep-codex"))
        .args(["hook", "--adapter", &format!("http://127.0.0.1:{port}")])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let input = br#"{"hook_event_name":"PermissionRequest","session_id":"t1","tool_name":"Bash","tool_input":{"command":"ls"}}"#;
    child.stdin.take().unwrap().write_all(input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "", "no decision on stdout");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("aep-codex hook") && said.contains(&port.to_string()), "{said}");
}
