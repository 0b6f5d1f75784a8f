//! "Notify this device": what the switch says, from what the browser
//! offers and whether this device is registered with the relay that
//! served the page (the one whose Web Push reaches it).

use super::setup::RelayInput;

/// The browser's answer to "may this site show notifications?".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Permission {
    /// Not asked yet.
    Ask,
    Granted,
    Denied,
}

/// What the browser offers, read once per look.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Facts {
    /// HTTPS, or loopback: push exists only in a secure context.
    pub secure: bool,
    pub service_worker: bool,
    pub push_manager: bool,
    pub notifications: bool,
    /// iPhone or iPad, where only a Home Screen web app may be notified.
    pub ios: bool,
    /// Opened from the Home Screen (`display-mode: standalone`).
    pub standalone: bool,
    pub permission: Permission,
    /// This browser holds a push subscription for the console.
    pub subscribed: bool,
    /// The person turned notifications on here (kept on the device).
    pub wanted: bool,
}

/// The switch's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceState {
    On,
    /// Turned on, but without Web Push (the relay has none, or the
    /// browser could not subscribe): notified while the console is open.
    OnWhileOpen,
    Off,
    /// The person (or a policy) refused notifications for this site.
    Blocked,
    /// iOS Safari in a tab: push needs the console on the Home Screen.
    NeedsHomeScreen,
    /// Not a secure context: the browser withholds push.
    Insecure,
    /// The browser has no service workers or no Push API.
    Unsupported,
}

impl DeviceState {
    pub fn of(f: &Facts) -> DeviceState {
        if !f.secure {
            DeviceState::Insecure
        } else if f.ios && !f.standalone {
            DeviceState::NeedsHomeScreen
        } else if !(f.service_worker && f.push_manager && f.notifications) {
            DeviceState::Unsupported
        } else if f.permission == Permission::Denied {
            DeviceState::Blocked
        } else if f.permission != Permission::Granted {
            DeviceState::Off
        } else if f.subscribed {
            DeviceState::On
        } else if f.wanted {
            DeviceState::OnWhileOpen
        } else {
            DeviceState::Off
        }
    }

    /// For `data-state` and tests.
    pub fn token(self) -> &'static str {
        match self {
            DeviceState::On => "on",
            DeviceState::OnWhileOpen => "on-while-open",
            DeviceState::Off => "off",
            DeviceState::Blocked => "blocked",
            DeviceState::NeedsHomeScreen => "needs-home-screen",
            DeviceState::Insecure => "insecure",
            DeviceState::Unsupported => "unsupported",
        }
    }

    /// The switch's short state, beside its name.
    pub fn words(self) -> &'static str {
        match self {
            DeviceState::On => "On",
            DeviceState::OnWhileOpen => "On while the console is open",
            DeviceState::Off => "Off",
            DeviceState::Blocked => "Blocked by the browser",
            DeviceState::NeedsHomeScreen => "Needs Add to Home Screen",
            DeviceState::Insecure | DeviceState::Unsupported => "Not available here",
        }
    }

    /// What it means, and what the person can do about it.
    pub fn explanation(self) -> &'static str {
        match self {
            DeviceState::On => "This device is notified when an agent asks, even with the console closed.",
            DeviceState::OnWhileOpen => {
                "This device is notified when an agent asks while the console is open in a tab, not once it is closed."
            }
            DeviceState::Off => "Turn on to be notified on this device when an agent asks, even with the console closed.",
            DeviceState::Blocked => {
                "This browser blocks notifications from this site. Allow them in the browser's site settings, then turn this on."
            }
            DeviceState::NeedsHomeScreen => {
                "On iPhone and iPad, only a console added to the Home Screen is notified: tap Share, then Add to Home Screen, and open it from there."
            }
            DeviceState::Insecure => {
                "This page did not come over HTTPS, so the browser offers no notifications here. Serve the relay over HTTPS."
            }
            DeviceState::Unsupported => "This browser does not offer Web Push (service workers and the Push API).",
        }
    }

    /// Whether the switch can be flipped now.
    pub fn switchable(self) -> bool {
        matches!(self, DeviceState::On | DeviceState::OnWhileOpen | DeviceState::Off)
    }

    /// Whether the switch shows on: this device is notified in some way.
    pub fn is_on(self) -> bool {
        matches!(self, DeviceState::On | DeviceState::OnWhileOpen)
    }
}

/// The relay that served the page, among those the console connects to:
/// the one whose pushes reach this origin's service worker.
pub fn page_relay<'a>(relays: &'a [RelayInput], protocol: &str, host: &str) -> Option<&'a RelayInput> {
    let secure = protocol == "https:";
    relays.iter().find(|r| {
        let url = r.url.trim();
        let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
        let scheme_secure = matches!(scheme.to_ascii_lowercase().as_str(), "wss" | "https");
        let their_host = rest.split(['/', '?', '#']).next().unwrap_or_default();
        scheme_secure == secure && their_host.eq_ignore_ascii_case(host)
    })
}

/// A registered device, named by its browser's push service.
pub fn device_name(endpoint: &str) -> String {
    let host =
        endpoint.split_once("://").map_or(endpoint, |(_, rest)| rest).split(['/', ':']).next().unwrap_or_default();
    let browser = match host {
        "fcm.googleapis.com" | "android.googleapis.com" => Some("Chrome"),
        "updates.push.services.mozilla.com" => Some("Firefox"),
        "web.push.apple.com" => Some("Safari"),
        h if h.ends_with(".notify.windows.com") => Some("Edge"),
        _ => None,
    };
    match browser {
        Some(b) => format!("{b} ({host})"),
        None => host.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts() -> Facts {
        Facts {
            secure: true,
            service_worker: true,
            push_manager: true,
            notifications: true,
            ios: false,
            standalone: false,
            permission: Permission::Granted,
            subscribed: true,
            wanted: true,
        }
    }

    #[test]
    fn the_switch_says_what_the_browser_allows() {
        assert_eq!(DeviceState::of(&facts()), DeviceState::On);
        assert_eq!(DeviceState::of(&Facts { subscribed: false, wanted: false, ..facts() }), DeviceState::Off);
        let tab_only = DeviceState::of(&Facts { subscribed: false, ..facts() });
        assert_eq!(tab_only, DeviceState::OnWhileOpen);
        assert!(tab_only.is_on() && tab_only.switchable());
        assert_eq!(DeviceState::of(&Facts { permission: Permission::Ask, ..facts() }), DeviceState::Off);
        assert_eq!(DeviceState::of(&Facts { permission: Permission::Denied, ..facts() }), DeviceState::Blocked);
        assert_eq!(DeviceState::of(&Facts { push_manager: false, ..facts() }), DeviceState::Unsupported);
        assert_eq!(DeviceState::of(&Facts { secure: false, ..facts() }), DeviceState::Insecure);
        let safari_tab = Facts { ios: true, push_manager: false, ..facts() };
        assert_eq!(DeviceState::of(&safari_tab), DeviceState::NeedsHomeScreen);
        assert_eq!(DeviceState::of(&Facts { standalone: true, push_manager: true, ..safari_tab }), DeviceState::On);
        assert!(DeviceState::Off.switchable() && !DeviceState::Blocked.switchable());
        assert_eq!(DeviceState::NeedsHomeScreen.words(), "Needs Add to Home Screen");
    }

    #[test]
    fn the_page_relay_is_the_one_on_this_origin() {
        let relays = [
            RelayInput { url: "wss://other.example/socket".into(), token: "a".into() },
            RelayInput { url: "ws://127.0.0.1:8080/socket".into(), token: "b".into() },
            RelayInput { url: "wss://Laptop.ts.net/socket".into(), token: "c".into() },
        ];
        assert_eq!(page_relay(&relays, "http:", "127.0.0.1:8080").map(|r| r.token.as_str()), Some("b"));
        assert_eq!(page_relay(&relays, "https:", "laptop.ts.net").map(|r| r.token.as_str()), Some("c"));
        assert!(page_relay(&relays, "https:", "127.0.0.1:8080").is_none());
        assert!(page_relay(&relays, "http:", "127.0.0.1:9").is_none());
    }

    #[test]
    fn devices_are_named_by_their_browser() {
        assert_eq!(device_name("https://fcm.googleapis.com/fcm/send/abc"), "Chrome (fcm.googleapis.com)");
        assert_eq!(device_name("https://web.push.apple.com/QO"), "Safari (web.push.apple.com)");
        assert_eq!(device_name("https://localhost:4443/push/1"), "localhost");
    }
}
