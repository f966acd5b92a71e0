//! The progress lines of a compilation: a large guest (a JavaScript or Python
//! runtime is 10-20 MB of wasm) compiles for seconds, and whoever waits for it
//! (`rekon test`, a rollout) should see why.

use std::time::Instant;

/// Runs `compile`, logging at info level when compiling `origin` (`bytes` long)
/// starts and when it ends, with the time it took.
pub(crate) fn compiling<T, E>(
    origin: &str,
    bytes: usize,
    compile: impl FnOnce() -> Result<T, E>,
) -> Result<T, E> {
    let size = megabytes(bytes);
    tracing::info!(module = origin, bytes, "compiling module ({size})");
    let started = Instant::now();
    let result = compile();
    let took = format!("{:.2} s", started.elapsed().as_secs_f64());
    match &result {
        Ok(_) => tracing::info!(module = origin, bytes, "compiled module ({size}) in {took}"),
        Err(_) => tracing::info!(
            module = origin,
            bytes,
            "module ({size}) failed to compile after {took}"
        ),
    }
    result
}

/// `12.0 MB`: sizes as people read them in a log line.
fn megabytes(bytes: usize) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_in_megabytes_with_one_decimal() {
        assert_eq!(megabytes(12_017_048), "12.0 MB");
        assert_eq!(megabytes(350_000), "0.3 MB");
    }
}
