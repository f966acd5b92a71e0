//! tracing setup: `RUST_LOG`-style filtering (default `info`), text or JSON lines.

use tracing_subscriber::EnvFilter;

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

pub fn init(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()));
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().flatten_event(true).init(),
    }
}
