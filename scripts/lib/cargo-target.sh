# shellcheck shell=bash
# Sourced by the scripts that run what cargo built (run.sh, hello-providers.sh, launchd/, the
# benchmarks): cargo_target_dir asks cargo where it puts its builds, so CARGO_TARGET_DIR,
# CARGO_BUILD_TARGET_DIR and build.target-dir of a .cargo/config.toml count as they do for
# `cargo build`, instead of assuming target/. Defines functions only; runs on bash 3.2 (macOS).

# cargo_target_dir WORKSPACE: prints the absolute target folder of the cargo workspace in folder
# WORKSPACE, asked from inside it, so its .cargo/config.toml counts as for a build run there.
# Takes a tenth of a second or so, and no network (--offline, --no-deps). Status 1, with
# cargo's error and what to do on stderr, when cargo cannot say.
cargo_target_dir() {
  local workspace="${1:?cargo_target_dir needs the workspace folder}" json dir
  if ! command -v cargo >/dev/null 2>&1; then
    echo "cargo-target: cargo is not on PATH, so where the build is cannot be asked: install Rust (rustup)" >&2
    return 1
  fi
  # python3 reads the JSON: jq may be missing on a fresh machine.
  if ! json="$(cd "$workspace" && cargo metadata --format-version 1 --no-deps --offline)"; then
    echo "cargo-target: cargo metadata failed in $workspace (its error is above), so where cargo puts the build is unknown" >&2
    return 1
  fi
  if ! dir="$(printf '%s' "$json" | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')" || [ -z "$dir" ]; then
    echo "cargo-target: cargo metadata in $workspace gave no target_directory" >&2
    return 1
  fi
  printf '%s\n' "$dir"
}
