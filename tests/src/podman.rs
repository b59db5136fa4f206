//! The container image as a test builds and runs it: the static (musl)
//! binary, the image from the repository's `Containerfile`, and `podman`
//! with the flags every container test passes.
//!
//! Debian's `podman` and `runc` and `musl-tools`, and the rustup target
//! `x86_64-unknown-linux-musl` (`.ci/run` installs them). Without one a
//! test is skipped (and says so), except with `CI=true`, where it fails.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The target of the image's binary: static, so it runs on an empty root.
pub const MUSL_TARGET: &str = "x86_64-unknown-linux-musl";

/// Podman's global flags on the machines these tests run on. Debian 12's
/// podman 4.3 with its default `crun` fails to start a container on a host
/// whose cgroups are in hybrid mode ("cgroups in hybrid mode not
/// supported"); `runc` starts it. Harmless where crun works.
const GLOBAL_FLAGS: [&str; 2] = ["--runtime", "runc"];

/// `podman run`'s flags for such hosts: explicit limits (a sandbox's own
/// `nofile` and `nproc` values are refused when copied into the container),
/// and the host's network, so the container reaches the test's servers on
/// 127.0.0.1 and the test reaches its listeners there.
pub const RUN_FLAGS: [&str; 6] = [
    "--ulimit",
    "nofile=1024:1024",
    "--ulimit",
    "nproc=4096:4096",
    "--network",
    "host",
];

/// The repository's root (this crate is `tests/` in it).
pub fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ is inside the repository")
        .to_path_buf()
}

/// `podman` with [`GLOBAL_FLAGS`], or `None` (the caller skips) when the
/// image cannot be had here: no podman or runc, no `musl-gcc`, no Rust
/// standard library for [`MUSL_TARGET`]. On CI what is missing fails the
/// test.
pub fn available() -> Option<()> {
    let Err(why) = missing() else {
        return Some(());
    };
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("CI=true, but {why}");
    }
    eprintln!("scout-tests: skipped a container image test: {why}");
    None
}

fn missing() -> Result<(), String> {
    for (tool, package) in [
        ("podman", "podman"),
        ("runc", "runc"),
        ("musl-gcc", "musl-tools"),
    ] {
        if on_path(tool).is_none() {
            return Err(format!(
                "no `{tool}` on PATH (apt-get install {package}, what .ci/run does)"
            ));
        }
    }
    let sysroot = Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()))
        .args(["--print", "sysroot"])
        .current_dir(repository())
        .output()
        .map_err(|e| format!("running rustc --print sysroot: {e}"))?;
    let sysroot = String::from_utf8_lossy(&sysroot.stdout).trim().to_string();
    if !Path::new(&sysroot)
        .join("lib/rustlib")
        .join(MUSL_TARGET)
        .is_dir()
    {
        return Err(format!(
            "the Rust target {MUSL_TARGET} is not installed (rustup toolchain install: \
             rust-toolchain.toml names it)"
        ));
    }
    Ok(())
}

fn on_path(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join(name))
            .chain(["/usr/sbin", "/sbin"].map(|dir| Path::new(dir).join(name)))
            .find(|candidate| candidate.is_file())
    })
}

/// `podman` with [`GLOBAL_FLAGS`].
pub fn podman() -> Command {
    let mut command = Command::new("podman");
    command.args(GLOBAL_FLAGS);
    command
}

/// Runs `command`; its stdout, trimmed, or a panic naming `what` with
/// its stderr.
pub fn checked(what: &str, command: &mut Command) -> String {
    let output = output(what, command);
    assert!(
        output.status.success(),
        "{what} failed ({}): {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

/// Runs `command` to its end, whatever its status.
pub fn output(what: &str, command: &mut Command) -> Output {
    command
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{what}: {e}"))
}

/// Builds `scout-host` for [`MUSL_TARGET`] with cargo profile `profile`
/// and returns the binary's path. Its own target directory
/// (`target/container`), so it never waits for the lock of the cargo running
/// the tests; Debian's `musl-gcc` compiles the C parts (SQLite, ring).
pub fn static_binary(profile: &str) -> PathBuf {
    let target_dir = repository().join("target").join("container");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    // At a lower priority: on a fresh machine this is a whole second build
    // of the host and its dependencies, made while the other tests run
    // theirs against their bounds.
    let mut command = Command::new("nice");
    command
        .current_dir(repository())
        .args(["-n", "10"])
        .arg(cargo)
        .args([
            "build",
            "--locked",
            "-p",
            "scout-host",
            "--profile",
            profile,
        ])
        .args(["--target", MUSL_TARGET])
        .env("CARGO_TARGET_DIR", &target_dir)
        .stdout(Stdio::inherit())
        .stderr(Stdio::inherit());
    if std::env::var_os("CC_x86_64_unknown_linux_musl").is_none() {
        command.env("CC_x86_64_unknown_linux_musl", "musl-gcc");
    }
    let status = command
        .status()
        .unwrap_or_else(|e| panic!("running cargo build for {MUSL_TARGET}: {e}"));
    assert!(
        status.success(),
        "cargo build -p scout-host --target {MUSL_TARGET} failed ({status}): its errors are above"
    );
    // `dev` builds into `debug/`; any other profile into its own name.
    let folder = if profile == "dev" { "debug" } else { profile };
    let binary = target_dir.join(MUSL_TARGET).join(folder).join("scout-host");
    assert!(binary.is_file(), "no binary at {}", binary.display());
    binary
}

/// An image built from the repository's `Containerfile` with `binary`,
/// tagged `tag`; removed when dropped.
pub struct Image {
    pub tag: String,
}

impl Image {
    /// `podman build --format docker` (the format that keeps the
    /// `HEALTHCHECK`) of a context folder holding `binary` and the empty
    /// `state/` folder, as README's commands prepare it.
    pub fn build(binary: &Path, tag: &str) -> Image {
        let context = repository()
            .join("target")
            .join("container")
            .join(format!("context-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&context);
        std::fs::create_dir_all(context.join("state")).expect("making the build context");
        std::fs::copy(binary, context.join("scout-host")).expect("copying the binary");
        let built = output(
            "podman build",
            podman()
                .args(["build", "--format", "docker", "--file"])
                .arg(repository().join("Containerfile"))
                .args(["--tag", tag])
                .arg(&context),
        );
        let _ = std::fs::remove_dir_all(&context);
        assert!(
            built.status.success(),
            "podman build failed ({}): {}{}",
            built.status,
            String::from_utf8_lossy(&built.stdout),
            String::from_utf8_lossy(&built.stderr)
        );
        Image {
            tag: tag.to_string(),
        }
    }

    /// `podman image inspect --format FORMAT`.
    pub fn inspect(&self, format: &str) -> String {
        checked(
            "podman image inspect",
            podman().args(["image", "inspect", "--format", format, &self.tag]),
        )
    }
}

impl Drop for Image {
    fn drop(&mut self) {
        let _ = podman()
            .args(["rmi", "--force", &self.tag])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// A container started with `podman run --detach`; removed with its
/// anonymous volumes when dropped.
pub struct Container {
    pub name: String,
}

impl Container {
    /// `podman run --detach --name NAME` [`RUN_FLAGS`] `args` `image` (a tag).
    pub fn run(name: &str, args: &[String], image: &str) -> Container {
        let _ = podman().args(["rm", "--force", "--volumes", name]).output();
        checked(
            "podman run",
            podman()
                .args(["run", "--detach", "--name", name])
                .args(RUN_FLAGS)
                .args(args)
                .arg(image),
        );
        Container {
            name: name.to_string(),
        }
    }

    /// `podman inspect --format FORMAT` of the container.
    pub fn inspect(&self, format: &str) -> String {
        checked(
            "podman inspect",
            podman().args(["inspect", "--format", format, &self.name]),
        )
    }

    /// `podman exec OPTIONS NAME COMMAND...`, run to its end.
    pub fn exec(&self, options: &[&str], command: &[&str]) -> Output {
        output(
            "podman exec",
            podman()
                .arg("exec")
                .args(options)
                .arg(&self.name)
                .args(command),
        )
    }

    /// The container's output so far (its log: `serve` logs to stderr).
    pub fn logs(&self) -> String {
        let out = output("podman logs", podman().args(["logs", &self.name]));
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    }
}

impl Drop for Container {
    fn drop(&mut self) {
        let _ = podman()
            .args(["rm", "--force", "--volumes", "--time", "5", &self.name])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}
