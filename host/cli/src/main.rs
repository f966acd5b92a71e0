//! `rekon`: the controller host whose decisions run as WebAssembly components.

use clap::{Parser, Subcommand};

mod client_limit;
mod cmd;
mod decision_modules;
mod demo;
mod guest_io;
mod guests;
mod line_diff;
mod logging;
mod module_cache;

#[derive(Parser)]
#[command(
    name = "rekon",
    version,
    about = "Kubernetes controllers with hot-swappable WebAssembly decisions"
)]
struct Cli {
    /// Log format.
    #[arg(long, global = true, value_enum, default_value_t = logging::LogFormat::Text, env = "REKON_LOG_FORMAT")]
    log_format: logging::LogFormat,
    #[command(subcommand)]
    command: Command,
}

// Parsed once at startup: the size of its largest variant costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
enum Command {
    /// Run one decision of a guest on an input file and print its actions as JSON.
    Eval(cmd::eval::Args),
    /// Run table-driven case files against a guest.
    Test(cmd::test::Args),
    /// Run the embedded Kubernetes API server until interrupted.
    Apiserver(cmd::apiserver::Args),
    /// Run the controllers against a cluster (or the embedded API server).
    Run(cmd::run::Args),
    /// Run the controllers on a state file until they converge; print the final state.
    Simulate(cmd::simulate::Args),
    /// Scaffold a guest project (a decision module) in a new directory.
    New(cmd::new::Args),
    /// Replay a state with an old module active and a new one in shadow; print the decisions that differ.
    Diff(cmd::diff::Args),
    /// Push a module file to an OCI registry; prints REF@sha256:<manifest digest>.
    Push(cmd::push::Args),
    /// Pull a module from an OCI registry into the OCI cache (and a file).
    Pull(cmd::pull::Args),
    /// Show a module's world, contract version, exports, digest and size (a file or a reference).
    Inspect(cmd::inspect::Args),
    /// Print the ClusterRole a controller module's declared scope needs.
    Rbac(cmd::rbac::Args),
    /// Sign a module in a registry with a cosign-compatible signature.
    Sign(cmd::sign::Args),
    /// Verify a module's cosign signature in a registry.
    Verify(cmd::verify::Args),
    /// Generate an ECDSA P-256 key pair for `rekon sign`.
    GenerateKey(cmd::generate_key::Args),
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    logging::init(cli.log_format);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let result = runtime.block_on(async {
        match cli.command {
            Command::Eval(args) => cmd::eval::run(args).await,
            Command::Test(args) => cmd::test::run(args).await,
            Command::Apiserver(args) => cmd::apiserver::run(args).await,
            Command::Run(args) => cmd::run::run(args).await,
            Command::Simulate(args) => cmd::simulate::run(args).await,
            Command::Diff(args) => cmd::diff::run(args).await,
            Command::Push(args) => cmd::push::run(args).await,
            Command::Pull(args) => cmd::pull::run(args).await,
            Command::Inspect(args) => cmd::inspect::run(args).await,
            Command::Rbac(args) => cmd::rbac::run(args).await,
            Command::Sign(args) => cmd::sign::run(args).await,
            Command::Verify(args) => cmd::verify::run(args).await,
            Command::GenerateKey(args) => cmd::generate_key::run(args).await,
            Command::New(args) => cmd::new::run(args).await,
        }
    });
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// clap's own consistency checks (unique argument and group ids, …) over
    /// every subcommand; they otherwise fire only when a command is parsed.
    #[test]
    fn the_command_line_is_consistent() {
        super::Cli::command().debug_assert();
    }
}
