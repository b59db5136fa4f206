//! `scout-host trace export`: the trace `serve` keeps, read from its store
//! after a cursor, for a SIEM to follow.

use anyhow::Result;
use std::path::PathBuf;

/// `scout-host trace`
#[derive(clap::Args)]
pub struct TraceArgs {
    #[command(subcommand)]
    command: TraceCommand,
}

#[derive(clap::Subcommand)]
enum TraceCommand {
    /// Writes every trace row after a cursor on stdout, oldest first, one
    /// JSON object per line with its `seq`; stderr says the cursor to resume
    /// from. For a SIEM: rows are what the trace holds, secrets scrubbed.
    Export {
        /// `serve`'s configuration file (its `[store]`).
        #[arg(long)]
        config: PathBuf,
        /// Export rows after this `seq` (0: from the start).
        #[arg(long, default_value_t = 0)]
        since: i64,
        /// At most this many rows.
        #[arg(long)]
        limit: Option<usize>,
        /// The output format.
        #[arg(long, value_enum, default_value_t = ExportFormat::Jsonl)]
        format: ExportFormat,
    },
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum ExportFormat {
    /// One JSON object per line.
    Jsonl,
}

/// Writes the rows on stdout and the cursor to resume from on stderr.
pub fn run(args: TraceArgs) -> Result<()> {
    let TraceCommand::Export {
        config,
        since,
        limit,
        format: ExportFormat::Jsonl,
    } = args.command;
    if since < 0 {
        anyhow::bail!("--since is a row's `seq` (0 or more)");
    }
    let config = scout_host::serve::ServeConfig::load(&config)?;
    let store = scout_host::store::open(
        config.store_location(),
        &scout_host::credentials::process_env,
        scout_host::store::Access::ReadOnly,
    )?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let done = scout_host::audit::export(store.as_ref(), since, limit, &mut out)?;
    eprintln!(
        "scout-host: exported {} trace rows; resume with --since {}",
        done.rows, done.cursor
    );
    Ok(())
}
