//! The stable codes JavaScript reads off the package's errors: an
//! `AepError`'s `code` and a `NackError`'s `kind`. Each is produced only
//! as a variant here, so a misspelt code does not compile (see the
//! crate's documentation).

use serde::Serialize;
use tsify::Tsify;

/// Why a request was refused before anything was sent (`AepError.code`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Tsify, strum::IntoStaticStr, strum::VariantArray)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum AepErrorCode {
    InvalidOptions,
    InvalidFilter,
    InvalidArgument,
    InvalidAnswer,
    InvalidCommand,
    NoWebsocket,
    UnknownRelay,
    UnknownRequest,
    UnknownCommand,
    NotOverControl,
    Unroutable,
    NotLive,
    Backpressure,
    NotPermitted,
    NotVendorCommand,
    AlreadyDecided,
    NoRoster,
    DuplicateCommand,
}

impl AepErrorCode {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

/// Who refused a command (`NackError.kind`): its target, a relay on the
/// target's behalf, or nobody within the ack window.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Tsify, strum::IntoStaticStr, strum::VariantArray)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
pub enum NackKind {
    Rejected,
    RelayRefused,
    /// Decided here, never sent by anyone; also the error's `reason`.
    Timeout,
}

impl NackKind {
    pub fn as_str(self) -> &'static str {
        self.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The name strum gives and the one serde writes are one name.
    #[test]
    fn every_code_serializes_as_its_name() {
        use strum::VariantArray;
        for &code in AepErrorCode::VARIANTS {
            assert_eq!(serde_json::to_value(code).unwrap(), code.as_str());
        }
        for &kind in NackKind::VARIANTS {
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.as_str());
        }
    }
}
