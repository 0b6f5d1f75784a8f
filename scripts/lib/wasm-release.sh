# Sourced by scripts/setup, build-console and build-npm: the toolchain of
# the two release wasm builds, the console and the npm package. A pinned
# nightly, because rebuilding the standard library for size (`-Z build-std`,
# `-C panic=immediate-abort`) is not on stable: about 21 KB less gzip for
# the console, which a phone on a mobile network waits for before the first
# card, and 27 KB for the package, which buys its engine a faster build
# inside the .wasm's budget. A panic was already a trap (nothing installs a
# panic hook), so only the formatting machinery behind it goes. Everything
# else builds with stable.
WASM_TOOLCHAIN=nightly-2026-05-20

# Whether that toolchain is installed with the library source it rebuilds.
wasm_toolchain_installed() {
  rustup component list --toolchain "$WASM_TOOLCHAIN" --installed 2>/dev/null | grep -q '^rust-src'
}

# Runs a command (a Trunk or wasm-pack build) on that toolchain with the
# standard library rebuilt for size. RUSTFLAGS already set are kept.
wasm_release() {
  if ! wasm_toolchain_installed; then
    echo "Rust $WASM_TOOLCHAIN with rust-src is not installed (run bash scripts/setup)" >&2
    return 1
  fi
  RUSTUP_TOOLCHAIN=$WASM_TOOLCHAIN \
  CARGO_UNSTABLE_BUILD_STD=std,panic_abort \
  CARGO_UNSTABLE_BUILD_STD_FEATURES=optimize_for_size \
  RUSTFLAGS="${RUSTFLAGS:-} -Z unstable-options -C panic=immediate-abort" \
    "$@"
}
