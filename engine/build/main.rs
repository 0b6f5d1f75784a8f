//! Compiles the AEP schemas into Rust the engine `include!`s: the payload
//! schemas (`schemas/types/*.json`) as a validation table, and the closed
//! sets of the registry (`schemas/registry/*.json`) plus the error-frame
//! codes the spec names only in prose (`vocabulary/error-codes.json`) as
//! enums, so a misspelt type or code does not compile.
//!
//! The engine runs in browsers, which have no filesystem, so the schemas are
//! read here, once, at build time.

use std::env;
use std::path::{Path, PathBuf};
use std::process;

mod payload;
mod vocabulary;

/// Where the spec's payload schemas live relative to the crate root, unless
/// overridden; the registry is their sibling `registry/`.
const DEFAULT_SCHEMAS_DIR: &str = "../../shared/aep/schemas/types";
const SCHEMAS_DIR_VAR: &str = "AEP_SCHEMAS_DIR";
/// The hand-kept list of error-frame codes, beside the generated vocabulary.
const ERROR_CODES_FILE: &str = "vocabulary/error-codes.json";

fn main() {
    if let Err(message) = run() {
        eprintln!("error: {message}");
        process::exit(1);
    }
}

fn run() -> Result<(), String> {
    println!("cargo:rerun-if-changed=build");
    println!("cargo:rerun-if-changed={ERROR_CODES_FILE}");
    println!("cargo:rerun-if-env-changed={SCHEMAS_DIR_VAR}");
    let root = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").ok_or("CARGO_MANIFEST_DIR is not set")?);
    let types = schemas_dir(&root)?;
    let registry = types.join("../registry");
    if !registry.is_dir() {
        return Err(format!("the AEP registry is missing: no directory {}", registry.display()));
    }
    println!("cargo:rerun-if-changed={}", types.display());
    println!("cargo:rerun-if-changed={}", registry.display());
    let out = PathBuf::from(env::var_os("OUT_DIR").ok_or("OUT_DIR is not set")?);
    payload::generate(&types, &out)?;
    vocabulary::generate(&registry, &root.join(ERROR_CODES_FILE), &out)
}

fn schemas_dir(root: &Path) -> Result<PathBuf, String> {
    let dir = match env::var_os(SCHEMAS_DIR_VAR) {
        Some(d) => PathBuf::from(d),
        None => root.join(DEFAULT_SCHEMAS_DIR),
    };
    if !dir.is_dir() {
        return Err(format!(
            "AEP payload schemas not found at {}: the AEP spec must be checked out beside this \
             repository (../../shared/aep from this crate), or {SCHEMAS_DIR_VAR} must name its schemas/types directory",
            dir.display()
        ));
    }
    Ok(dir)
}
