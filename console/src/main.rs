//! Starts the AEP approval console (the app is the `aep_console` library).

#[cfg(target_arch = "wasm32")]
fn main() {
    aep_console::start();
}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    eprintln!("aep-console runs in a browser: build it with scripts/build-console and open it from a relay");
    std::process::exit(2);
}
