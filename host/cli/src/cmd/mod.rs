//! One module per subcommand; each exposes `Args` and `async fn run(Args) -> anyhow::Result<ExitCode>`.

pub mod apiserver;
pub mod diff;
pub mod eval;
pub mod new;
pub mod run;
pub mod simulate;
pub mod test;
