//! The attention lifecycle's vocabulary (AEP-0002 §7): response channels
//! and the kinds of request, read the same way by agents, the store and UIs.

/// A response channel (AEP-0008): one a request names in `respond_via`,
/// or the one an answer travelled by (`via` on `attention.answered`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Channel {
    Control,
    Oob,
    Unrecognized(String),
}

impl Channel {
    pub fn parse(s: &str) -> Channel {
        match s {
            "control" => Channel::Control,
            "oob" => Channel::Oob,
            other => Channel::Unrecognized(other.to_owned()),
        }
    }

    /// The channel's name on the wire.
    pub fn as_str(&self) -> &str {
        match self {
            Channel::Control => "control",
            Channel::Oob => "oob",
            Channel::Unrecognized(s) => s,
        }
    }
}

/// What the agent is asking for (`data.kind`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum AttentionKind {
    Permission,
    Input,
    Auth,
    Review,
    Form,
    Other,
    /// A kind this engine does not know, carried as sent.
    Unrecognized(String),
}

impl AttentionKind {
    /// The six registered kinds.
    pub const REGISTERED: [AttentionKind; 6] = [
        AttentionKind::Permission,
        AttentionKind::Input,
        AttentionKind::Auth,
        AttentionKind::Review,
        AttentionKind::Form,
        AttentionKind::Other,
    ];

    pub fn parse(s: &str) -> AttentionKind {
        AttentionKind::REGISTERED
            .into_iter()
            .find(|k| k.as_str() == s)
            .unwrap_or_else(|| AttentionKind::Unrecognized(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        match self {
            AttentionKind::Permission => "permission",
            AttentionKind::Input => "input",
            AttentionKind::Auth => "auth",
            AttentionKind::Review => "review",
            AttentionKind::Form => "form",
            AttentionKind::Other => "other",
            AttentionKind::Unrecognized(s) => s,
        }
    }

    pub fn is_registered(&self) -> bool {
        !matches!(self, AttentionKind::Unrecognized(_))
    }
}

/// What choosing an option id means for what was asked. Options are the
/// agent's own ids, so this reads the words agents use (`allow`,
/// `deny_always`, `reject-once`…); anything else means neither, and a UI
/// treats it as a plain answer rather than an approval or a refusal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OptionMeaning {
    /// Grants what was asked (allow, approve, yes…).
    Grants,
    /// Refuses it (deny, reject, no…).
    Refuses,
    Neither,
}

impl OptionMeaning {
    const GRANTING: &'static [&'static str] =
        &["allow", "approve", "yes", "accept", "ok", "confirm", "proceed", "grant", "always", "continue"];
    const REFUSING: &'static [&'static str] =
        &["deny", "reject", "no", "decline", "refuse", "block", "cancel", "abort", "stop", "disallow", "never"];

    /// The meaning of option `id`: one of the words, alone or with a
    /// `_…` / `-…` qualifier, in any case.
    pub fn of(id: &str) -> OptionMeaning {
        let id = id.to_ascii_lowercase();
        let names = |words: &[&str]| {
            words.iter().any(|w| {
                id.strip_prefix(w).is_some_and(|rest| rest.is_empty() || rest.starts_with('_') || rest.starts_with('-'))
            })
        };
        if names(Self::GRANTING) {
            OptionMeaning::Grants
        } else if names(Self::REFUSING) {
            OptionMeaning::Refuses
        } else {
            OptionMeaning::Neither
        }
    }

    /// A stable name, for wire formats and styling.
    pub fn as_str(self) -> &'static str {
        match self {
            OptionMeaning::Grants => "grants",
            OptionMeaning::Refuses => "refuses",
            OptionMeaning::Neither => "neither",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip_and_unknown_ones_are_carried() {
        for k in AttentionKind::REGISTERED {
            assert_eq!(AttentionKind::parse(k.as_str()), k);
            assert!(k.is_registered());
        }
        let odd = AttentionKind::parse("captcha");
        assert_eq!(odd, AttentionKind::Unrecognized("captcha".into()));
        assert_eq!(odd.as_str(), "captcha");
        assert!(!odd.is_registered());
    }

    #[test]
    fn option_ids_read_as_granting_refusing_or_neither() {
        for id in ["allow", "Approve", "allow_once", "allow_always", "yes", "proceed-now"] {
            assert_eq!(OptionMeaning::of(id), OptionMeaning::Grants, "{id}");
        }
        for id in ["deny", "reject-once", "NO", "deny_always", "never"] {
            assert_eq!(OptionMeaning::of(id), OptionMeaning::Refuses, "{id}");
        }
        for id in ["allowlist-check", "notify", "okay", "option_a", ""] {
            assert_eq!(OptionMeaning::of(id), OptionMeaning::Neither, "{id}");
        }
    }
}
