//! The `scout-host` command line: the parser, and a dispatch to each
//! subcommand's module under `cli/`.

mod cli;

use anyhow::Result;
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "scout-host",
    version,
    about = "Runs Scout connectors as WebAssembly components"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Shows a component's tools, schemas, WITHHELD list and imports (a
    /// file, or an OCI artifact pulled and checked first); or, given
    /// `mcp+https://HOST/PATH`, what a remote MCP server offers now against
    /// what an operator reviewed.
    Inspect(cli::inspect::InspectArgs),
    /// Prints the tool surface a session of ROLE would get.
    Surface(cli::surface::SurfaceArgs),
    /// Lists what a session of ROLE could actually cause: per tool its
    /// gate, routes, destinations, credential, folders and joint reads;
    /// with --config, also the dead authority serve's store holds.
    Audit(cli::audit::AuditArgs),
    /// Writes the permissions page and the connectors page (Markdown),
    /// generated from the code, the components and their fixtures.
    Docs(cli::docs::DocsArgs),
    /// The configuration file: `check` one without starting (every error
    /// with its key and line, then what it would serve), write the
    /// `reference` page, print its JSON `schema`.
    Config(cli::config::ConfigArgs),
    /// Reads the trace `serve` keeps.
    Trace(cli::trace::TraceArgs),
    /// Operators' Cedar policies before a change: `check` a candidate
    /// against the deployment's schema, `test` it by replaying the calls a
    /// store recorded (the decisions that would change), print the `schema`.
    Policy(cli::policy::PolicyArgs),
    /// Publishes a component to an OCI registry in the WebAssembly artifact
    /// layout (config `application/vnd.wasm.config.v0+json`, one
    /// `application/wasm` layer); prints the reference pinned at its digest
    /// as JSON. Registry credentials: SCOUT_REGISTRY_USERNAME and
    /// SCOUT_REGISTRY_PASSWORD, else the Docker config file.
    Push(cli::artifacts::PushArgs),
    /// Pulls a component artifact into the shared artifact cache, every
    /// byte checked against its digest, and copies it to --output; prints
    /// the reference pinned at its digest as JSON.
    Pull(cli::artifacts::PullArgs),
    /// Signs an artifact's manifest digest with a private key and writes
    /// the signature beside it in cosign's layout (`sha256-HEX.sig`), which
    /// `cosign verify --key` and `require_signature` read. An encrypted key's
    /// password comes from COSIGN_PASSWORD.
    Sign(cli::artifacts::SignArgs),
    /// Makes an ECDSA P-256 key pair for `sign`: PREFIX.key (encrypted with
    /// COSIGN_PASSWORD, cosign's format) and PREFIX.pub.
    Keygen(cli::artifacts::KeygenArgs),
    /// Prints the operator switches as read from the environment, and any
    /// value not understood (the banner `serve` will print at start).
    Switches,
    /// Asks a running `serve` whether it is ready (`/readyz`), for a
    /// container's health check: exit 0 on 2xx, else 1 with the reason.
    Health(cli::health::HealthArgs),
    /// Serves the admin API and MCP endpoints (streamable HTTP) as the
    /// configuration file says; with `--stdio`, serves one session's
    /// connector over stdin/stdout instead (the admin API listens too, for
    /// approvals, when its address is free).
    Serve(cli::serve::ServeArgs),
    /// Runs one tool once, in a fresh runtime, its `http` handle live,
    /// recording (--record DIR) or replaying (--replay DIR); prints the
    /// tool's output as JSON (`{"ok": ...}` or `{"err": ...}`) on stdout and
    /// the HTTP exchanges on stderr. Exit 0 ok, 1 tool error, 2 usage, load or host error.
    Call(cli::call::CallArgs),
    /// Runs the cases of DIR/cases.json against the fixtures in DIR, replay
    /// only (nothing is sent). Exit 0 all passed, 1 any failed, 2 usage or load error.
    Test(cli::cases::TestArgs),
    /// Creates a connector crate from the SDK's template.
    New(cli::new::NewArgs),
    /// A running fleet's connectors: `list`, and `add`, `upgrade` or
    /// `retire` one from a published artifact, through any host's admin
    /// API (the admin credential from SCOUT_ADMIN_TOKEN). Exit 0 done, 1
    /// refused by the host, 2 usage or the host unreachable.
    Connectors(cli::connectors::ConnectorsArgs),
    /// Builds the connector crate in DIR into a small component (`wasm-opt -Oz` when installed) and checks it loads.
    Build(cli::build::BuildArgs),
    /// Embeds the manifest made from a connector's WIT (as scout-sdk's
    /// `export!` does for Rust) into a component built in another language
    /// (componentize-js, componentize-py), and checks it loads. Exit 0
    /// loadable, 2 refused or usage.
    Manifest(cli::manifest::ManifestArgs),
    /// Runs the GitHub connector against a loopback GitHub-format server.
    #[cfg(feature = "demo")]
    Demo,
    /// Runs the demo's fake GitHub API (GitHub's REST wire format, one
    /// seeded repository `octo/hello`) on 127.0.0.1:PORT until ctrl-c, for
    /// trying `serve` without a GitHub account.
    #[cfg(feature = "demo")]
    FakeGithub(cli::demo::FakeGithubArgs),
}

fn main() -> Result<()> {
    let command = Cli::parse().command;
    // `serve` starts the log as its configuration says; every other
    // command logs in text.
    if !matches!(command, Command::Serve(_)) {
        scout_host::logs::init(scout_host::logs::LogFormat::Text);
    }
    match command {
        Command::Inspect(args) => cli::inspect::run(args),
        Command::Surface(args) => cli::surface::run(args),
        Command::Audit(args) => cli::audit::run(args),
        Command::Docs(args) => cli::docs::run(args),
        Command::Trace(args) => cli::trace::run(args),
        Command::Push(args) => cli::artifacts::push(args),
        Command::Pull(args) => cli::artifacts::pull(args),
        Command::Sign(args) => cli::artifacts::sign(args),
        Command::Keygen(args) => cli::artifacts::keygen(args),
        Command::Switches => cli::serve::switches(),
        Command::Health(args) => std::process::exit(cli::health::run(args)),
        Command::Serve(args) => cli::serve::run(args),
        // The author's commands exit with their own status (0, 1 or 2).
        Command::Call(args) => exit_with(cli::call::run(args)),
        Command::Test(args) => exit_with(cli::cases::run(args)),
        Command::New(args) => exit_with(cli::new::run(args)),
        Command::Connectors(args) => exit_with(cli::connectors::run(args)),
        Command::Build(args) => exit_with(cli::build::run(args)),
        Command::Manifest(args) => exit_with(cli::manifest::run(args)),
        Command::Policy(args) => exit_with(cli::policy::run(args)),
        Command::Config(args) => exit_with(cli::config::run(args)),
        #[cfg(feature = "demo")]
        Command::Demo => cli::demo::run(),
        #[cfg(feature = "demo")]
        Command::FakeGithub(args) => cli::demo::fake_github(args),
    }
}

/// Exits with the command's status, or 2 after printing its error.
fn exit_with(result: Result<i32>) -> ! {
    std::process::exit(result.unwrap_or_else(|e| {
        eprintln!("error: {e:#}");
        cli::EXIT_ERROR
    }))
}
