//! Pairing a device (`aep-relay pair`, `aep-relay unpair`): each phone or
//! browser gets a principal of its own in the credentials file, so it is
//! named in what it does and can be revoked alone. The running relay
//! notices the file change within a second (see `credentials`).
//!
//! The file is only ever replaced whole (a temporary file renamed over
//! it), so the relay never reads half a line, and every line but the one
//! added or removed is kept as it was, comments included.

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::ValueEnum;
use qrcode::render::unicode::Dense1x2;
use qrcode::QrCode;

use crate::auth::{fresh_token, parse_credentials, token_hash, ANONYMOUS, OWNER};
use crate::cli::{Command, PairArgs};
use crate::public_url::PublicUrl;

/// Where links point when no public URL is given: the relay's default
/// listening address.
const DEFAULT_URL: &str = "http://127.0.0.1:8787";

/// Names a device may not take: the relay's own principals (`--token`'s,
/// the open posture's, the demonstration agents').
const RESERVED: [&str; 3] = [OWNER, ANONYMOUS, "demo"];

/// Longest device name.
const MAX_NAME: usize = 64;

/// What a paired device may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum DeviceRole {
    /// Answer, approve and steer agents, and watch.
    Operator,
    /// Only watch.
    Viewer,
}

impl DeviceRole {
    /// The roles field of its credentials line.
    fn roles(self) -> &'static str {
        match self {
            DeviceRole::Operator => "operator,viewer",
            DeviceRole::Viewer => "viewer",
        }
    }

    fn word(self) -> &'static str {
        match self {
            DeviceRole::Operator => "operator",
            DeviceRole::Viewer => "viewer",
        }
    }
}

/// A device just paired: its token, shown once, and the link that carries
/// it, also as a QR code.
pub struct Paired {
    pub token: String,
    pub link: String,
    pub qr: String,
}

/// Adds a principal named `name` with a fresh token to `file` (made if
/// absent). Refuses a name already there, a name outside the safe
/// characters, and a file that does not read as credentials.
pub fn pair(file: &Path, name: &str, role: DeviceRole, url: &PublicUrl) -> Result<Paired, String> {
    check_name(name)?;
    let token = fresh_token();
    let link = url.link(&token);
    // Drawn before the file is touched: a link too long for a code pairs nothing.
    let qr = qr(&link)?;
    edit(file, |text, names| {
        if names.iter().any(|n| n == name) {
            return Err(format!(
                "`{name}` is already paired in {}: choose another name, or `aep-relay unpair {name}` first",
                file.display()
            ));
        }
        let mut text = text.to_owned();
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&format!("{name} {} {}\n", role.roles(), token_hash(&token)));
        Ok(text)
    })?;
    Ok(Paired { token, link, qr })
}

/// Removes the principal named `name` from `file`.
pub fn unpair(file: &Path, name: &str) -> Result<(), String> {
    edit(file, |text, names| {
        if !names.iter().any(|n| n == name) {
            return Err(format!("no device named `{name}` is paired in {}", file.display()));
        }
        Ok(text.split_inclusive('\n').filter(|line| line_name(line) != Some(name)).collect())
    })
}

/// The link as a QR code for a terminal: two rows of modules a line in
/// half blocks, with the quiet zone. Light modules are drawn, dark ones
/// left blank, as a light-on-dark terminal shows a code the right way round.
pub fn qr(link: &str) -> Result<String, String> {
    let code = QrCode::new(link.as_bytes()).map_err(|e| format!("the link does not fit a QR code: {e}"))?;
    Ok(code.render::<Dense1x2>().dark_color(Dense1x2::Light).light_color(Dense1x2::Dark).quiet_zone(true).build())
}

/// Runs `pair` or `unpair` as the binary does: what it did on stdout, why
/// it refused on stderr, and a non-zero exit then.
pub fn run(command: &Command) -> ExitCode {
    let done = match command {
        Command::Pair(args) => run_pair(args),
        Command::Audit(command) => return crate::audit::run(command),
        Command::Unpair(args) => unpair(&args.credentials, &args.name).map(|()| {
            println!(
                "Unpaired `{}`: a running relay refuses its token and closes its connections within a second.",
                args.name
            );
        }),
    };
    match done {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("aep-relay: {e}");
            ExitCode::from(1)
        }
    }
}

fn run_pair(args: &PairArgs) -> Result<(), String> {
    let url = match args.public_urls.first() {
        Some(url) => url.clone(),
        None => PublicUrl::parse(DEFAULT_URL)?,
    };
    let paired = pair(&args.credentials, &args.name, args.role, &url)?;
    if args.public_urls.is_empty() {
        eprintln!(
            "aep-relay: no --public-url (or AEP_PUBLIC_URL): the link points at {DEFAULT_URL}, which only this machine reaches"
        );
    }
    println!(
        "Paired `{}` as {} in {}. Open this link on the device, or scan the code; it is shown only this once:\n\n  {}\n\n{}\n\n\
         A running relay accepts it within a second. `aep-relay unpair {}` revokes it.",
        args.name,
        args.role.word(),
        args.credentials.display(),
        paired.link,
        paired.qr,
        args.name,
    );
    Ok(())
}

/// Letters, digits, `.`, `_` and `-`, starting with a letter or digit: a
/// name that reads the same in the file, in a shell and in the console.
fn check_name(name: &str) -> Result<(), String> {
    let safe = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    if name.is_empty()
        || name.len() > MAX_NAME
        || !name.chars().all(safe)
        || !name.starts_with(|c: char| c.is_ascii_alphanumeric())
    {
        return Err(format!(
            "`{name}` is not a device name: use up to {MAX_NAME} letters, digits, `.`, `_` or `-`, starting with a letter or digit"
        ));
    }
    if RESERVED.contains(&name) {
        return Err(format!("`{name}` is a name the relay keeps for itself: choose another"));
    }
    Ok(())
}

/// The principal a credentials line names, if it names one.
fn line_name(line: &str) -> Option<&str> {
    line.split('#').next().unwrap_or("").split_whitespace().next()
}

/// Reads `file` (empty when absent), hands its text and the names in it to
/// `change`, and puts what that returns in its place. One edit at a time
/// (a lock beside the file); a file that does not read as credentials is
/// left as it is.
fn edit(file: &Path, change: impl FnOnce(&str, &[String]) -> Result<String, String>) -> Result<(), String> {
    let _lock = lock(file)?;
    let text = match fs::read_to_string(file) {
        Ok(text) => text,
        Err(e) if e.kind() == ErrorKind::NotFound => String::new(),
        Err(e) => return Err(format!("credentials file {}: {e}", file.display())),
    };
    let entries = parse_credentials(&text)
        .map_err(|e| format!("credentials file {}: {e}; nothing was changed", file.display()))?;
    let names: Vec<String> = entries.iter().map(|(_, p)| p.name.to_string()).collect();
    let text = change(&text, &names)?;
    replace(file, &text).map_err(|e| format!("credentials file {}: {e}; nothing was changed", file.display()))
}

/// A hidden file beside `file`, held locked while it is edited, so two
/// edits at once do not lose one another.
fn lock(file: &Path) -> Result<File, String> {
    let path = sibling(file, "lock");
    let lock = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| format!("cannot lock {}: {e}", path.display()))?;
    lock.lock().map_err(|e| format!("cannot lock {}: {e}", path.display()))?;
    Ok(lock)
}

/// `.{name}.{suffix}` in the same directory as `file`.
fn sibling(file: &Path, suffix: &str) -> PathBuf {
    let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    file.with_file_name(format!(".{name}.{suffix}"))
}

/// Writes `text` to a temporary file beside `file` and renames it over
/// `file`: a reader sees the old file or the new one, never a part. It
/// keeps the permissions it had; a new one is readable by its owner only,
/// as it names who may command.
fn replace(file: &Path, text: &str) -> std::io::Result<()> {
    let temp = sibling(file, &format!("{}.tmp", std::process::id()));
    let written = (|| {
        let mut options = OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut out = options.open(&temp)?;
        if let Ok(was) = fs::metadata(file) {
            out.set_permissions(was.permissions())?;
        }
        out.write_all(text.as_bytes())?;
        out.sync_all()?;
        fs::rename(&temp, file)
    })();
    if written.is_err() {
        let _ = fs::remove_file(&temp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch() -> PathBuf {
        let dir = std::env::temp_dir().join(format!("aep-pairing-{}", fresh_token()));
        fs::create_dir_all(&dir).unwrap();
        dir.join("credentials")
    }

    fn local() -> PublicUrl {
        PublicUrl::parse(DEFAULT_URL).unwrap()
    }

    #[test]
    fn pairing_adds_a_hashed_line_and_keeps_the_rest() {
        let file = scratch();
        let before = format!("# who roles hash\nwall viewer {}", token_hash("w"));
        fs::write(&file, &before).unwrap();
        let phone = pair(&file, "phone", DeviceRole::Operator, &local()).unwrap();
        assert_eq!(phone.link, format!("http://127.0.0.1:8787/#token={}", phone.token));
        assert!(phone.token.len() == 32 && phone.token.bytes().all(|b| b.is_ascii_hexdigit()));
        let text = fs::read_to_string(&file).unwrap();
        assert_eq!(text, format!("{before}\nphone operator,viewer {}\n", token_hash(&phone.token)));
        assert!(!text.contains(&phone.token), "the file keeps the hash only");

        let tablet = pair(&file, "tablet", DeviceRole::Viewer, &local()).unwrap();
        assert_ne!(tablet.token, phone.token);
        unpair(&file, "phone").unwrap();
        assert_eq!(
            fs::read_to_string(&file).unwrap(),
            format!("{before}\ntablet viewer {}\n", token_hash(&tablet.token))
        );
        let leftovers: Vec<_> = fs::read_dir(file.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }

    #[test]
    fn refusals_change_nothing() {
        let file = scratch();
        pair(&file, "phone", DeviceRole::Operator, &local()).unwrap();
        let before = fs::read(&file).unwrap();
        for bad in ["", "a b", "-x", "../x", "x#y", "owner", "demo", &"x".repeat(65)] {
            assert!(pair(&file, bad, DeviceRole::Viewer, &local()).is_err(), "{bad:?}");
        }
        assert!(pair(&file, "phone", DeviceRole::Viewer, &local()).err().unwrap().contains("already paired"));
        assert!(unpair(&file, "laptop").unwrap_err().contains("no device named `laptop`"));
        assert_eq!(fs::read(&file).unwrap(), before);

        let broken = scratch();
        fs::write(&broken, "half a line\n").unwrap();
        assert!(pair(&broken, "phone", DeviceRole::Viewer, &local()).err().unwrap().contains("nothing was changed"));
        assert_eq!(fs::read_to_string(&broken).unwrap(), "half a line\n");
    }

    #[test]
    fn the_code_has_its_quiet_zone_and_one_width() {
        let code = qr("http://127.0.0.1:8787/#token=0123456789abcdef0123456789abcdef").unwrap();
        let lines: Vec<&str> = code.lines().collect();
        let width = lines[0].chars().count();
        assert!(lines.iter().all(|l| l.chars().count() == width));
        assert!(lines[0].chars().all(|c| c == '█'), "the quiet zone is drawn light");
    }
}
