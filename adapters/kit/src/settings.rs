//! The settings-file edit contract every adapter's `install` and
//! `uninstall` keep: the adapter's entries merged beside the user's,
//! added once however often it runs, removed exactly (a file comes back
//! byte for byte), and never a half-written file.

use std::io;
use std::path::Path;

/// What an install or a removal did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Changed,
    Unchanged,
}

/// Writes `text` beside `path`, then moves it over: a reader never sees
/// half a file. The directory is made if missing.
pub fn write_whole(path: &Path, text: &str) -> Result<(), (std::path::PathBuf, io::Error)> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| (dir.to_owned(), e))?;
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".aep-tmp");
    let tmp = std::path::PathBuf::from(tmp);
    std::fs::write(&tmp, text).map_err(|e| (tmp.clone(), e))?;
    std::fs::rename(&tmp, path).map_err(|e| (path.to_owned(), e))
}
