//! `scout-host demo` and `fake-github` (feature `demo`): the GitHub
//! connector against a loopback GitHub-format server, so `serve` can be
//! tried without a GitHub account. The production binary links neither.

use anyhow::Result;

/// `scout-host fake-github --token TOKEN`
#[derive(clap::Args)]
pub struct FakeGithubArgs {
    #[arg(long, default_value_t = 7421)]
    port: u16,
    /// The token the fake server accepts.
    #[arg(long)]
    token: String,
}

/// Runs the demo.
pub fn run() -> Result<()> {
    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(scout_host::demo::run())
}

/// Serves the fake GitHub API on 127.0.0.1:PORT until ctrl-c.
pub fn fake_github(args: FakeGithubArgs) -> Result<()> {
    let rt = tokio::runtime::Runtime::new()?;
    rt.block_on(async {
        let server = scout_tests::fake_github::FakeGitHub::start_on(args.port, &args.token).await?;
        println!(
            "fake GitHub API at {} (repository octo/hello); ctrl-c stops it",
            server.origin()
        );
        tokio::signal::ctrl_c().await?;
        Ok(())
    })
}
