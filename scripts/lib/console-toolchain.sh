# Sourced by scripts/setup and scripts/build-console: the Rust toolchain
# the console's release build uses. A pinned nightly, because rebuilding
# the standard library for size (`-Z build-std`, `-C panic=immediate-abort`)
# is not on stable; it takes the console from about 320 to about 301 KB
# served (brotli), which a phone on a mobile network waits for before the
# first card. Everything else builds with stable.
CONSOLE_TOOLCHAIN=nightly-2026-05-20
