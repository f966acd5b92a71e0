//! `wasi:io` streams and polls, and the monotonic clock, without tokio.
//!
//! wasmtime-wasi's synchronous bindings run every blocking stream call
//! (`blocking-write-and-flush` is how a Rust guest writes its panic message to
//! stderr) through `block_on` on the ambient tokio runtime, which panics on a
//! runtime worker thread and on a current-thread runtime. A decision's streams
//! are all in memory (closed stdin, discarding stdout, captured stderr), so
//! their futures need no reactor: these bindings drive them with a plain
//! thread-parking executor, and a decision runs the same from a tokio task, a
//! `#[tokio::main]` CLI or a plain thread.
//!
//! The only other pollables are clock subscriptions, whose tokio timers would
//! need a reactor. A decision's clock never moves, so waiting for it would be
//! forever: a zero wait is ready at once, any other wait traps.

use futures::executor::block_on;
use wasmtime::component::{HasData, Linker, Resource, ResourceTable};
use wasmtime_wasi::WasiView;
use wasmtime_wasi::p2::bindings::clocks::monotonic_clock;
use wasmtime_wasi::p2::bindings::sync::io::{poll, streams};
use wasmtime_wasi::p2::{DynPollable, Pollable, StreamError, StreamResult, subscribe};
use wasmtime_wasi_io::bindings::wasi::io::poll as async_poll;
use wasmtime_wasi_io::bindings::wasi::io::streams::{
    HostInputStream as AsyncInput, HostOutputStream as AsyncOutput,
};

type OutputStream = streams::OutputStream;
type InputStream = streams::InputStream;

/// The monotonic clock of every decision: always at zero, one-second resolution.
pub(crate) const MONOTONIC_NOW: u64 = 0;
pub(crate) const MONOTONIC_RESOLUTION: u64 = 1_000_000_000;

/// Replaces the `wasi:io/poll`, `wasi:io/streams` and
/// `wasi:clocks/monotonic-clock` imports that
/// `wasmtime_wasi::p2::add_to_linker_sync` defined.
pub(crate) fn shadow_tokio_io<T: WasiView + 'static>(
    linker: &mut Linker<T>,
) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    monotonic_clock::add_to_linker::<T, NoTokio>(linker, |t| Io(t.ctx().table))?;
    poll::add_to_linker::<T, NoTokio>(linker, |t| Io(t.ctx().table))?;
    streams::add_to_linker::<T, NoTokio>(linker, |t| Io(t.ctx().table))?;
    linker.allow_shadowing(false);
    Ok(())
}

struct NoTokio;

impl HasData for NoTokio {
    type Data<'a> = Io<'a>;
}

/// The store's resource table, seen through the tokio-free bindings.
pub(crate) struct Io<'a>(&'a mut ResourceTable);

impl streams::Host for Io<'_> {
    fn convert_stream_error(&mut self, err: StreamError) -> wasmtime::Result<streams::StreamError> {
        streams::Host::convert_stream_error(&mut *self.0, err)
    }
}

impl streams::HostOutputStream for Io<'_> {
    fn drop(&mut self, stream: Resource<OutputStream>) -> wasmtime::Result<()> {
        block_on(AsyncOutput::drop(&mut *self.0, stream))
    }

    fn check_write(&mut self, stream: Resource<OutputStream>) -> StreamResult<u64> {
        streams::HostOutputStream::check_write(&mut *self.0, stream)
    }

    fn write(&mut self, stream: Resource<OutputStream>, bytes: Vec<u8>) -> StreamResult<()> {
        streams::HostOutputStream::write(&mut *self.0, stream, bytes)
    }

    fn blocking_write_and_flush(
        &mut self,
        stream: Resource<OutputStream>,
        bytes: Vec<u8>,
    ) -> StreamResult<()> {
        block_on(AsyncOutput::blocking_write_and_flush(
            &mut *self.0,
            stream,
            bytes,
        ))
    }

    fn blocking_write_zeroes_and_flush(
        &mut self,
        stream: Resource<OutputStream>,
        len: u64,
    ) -> StreamResult<()> {
        block_on(AsyncOutput::blocking_write_zeroes_and_flush(
            self.0, stream, len,
        ))
    }

    fn subscribe(
        &mut self,
        stream: Resource<OutputStream>,
    ) -> wasmtime::Result<Resource<DynPollable>> {
        streams::HostOutputStream::subscribe(&mut *self.0, stream)
    }

    fn write_zeroes(&mut self, stream: Resource<OutputStream>, len: u64) -> StreamResult<()> {
        streams::HostOutputStream::write_zeroes(&mut *self.0, stream, len)
    }

    fn flush(&mut self, stream: Resource<OutputStream>) -> StreamResult<()> {
        streams::HostOutputStream::flush(&mut *self.0, stream)
    }

    fn blocking_flush(&mut self, stream: Resource<OutputStream>) -> StreamResult<()> {
        block_on(AsyncOutput::blocking_flush(&mut *self.0, stream))
    }

    fn splice(
        &mut self,
        dst: Resource<OutputStream>,
        src: Resource<InputStream>,
        len: u64,
    ) -> StreamResult<u64> {
        streams::HostOutputStream::splice(&mut *self.0, dst, src, len)
    }

    fn blocking_splice(
        &mut self,
        dst: Resource<OutputStream>,
        src: Resource<InputStream>,
        len: u64,
    ) -> StreamResult<u64> {
        block_on(AsyncOutput::blocking_splice(&mut *self.0, dst, src, len))
    }
}

impl streams::HostInputStream for Io<'_> {
    fn drop(&mut self, stream: Resource<InputStream>) -> wasmtime::Result<()> {
        block_on(AsyncInput::drop(&mut *self.0, stream))
    }

    fn read(&mut self, stream: Resource<InputStream>, len: u64) -> StreamResult<Vec<u8>> {
        streams::HostInputStream::read(&mut *self.0, stream, len)
    }

    fn blocking_read(&mut self, stream: Resource<InputStream>, len: u64) -> StreamResult<Vec<u8>> {
        block_on(AsyncInput::blocking_read(&mut *self.0, stream, len))
    }

    fn skip(&mut self, stream: Resource<InputStream>, len: u64) -> StreamResult<u64> {
        streams::HostInputStream::skip(&mut *self.0, stream, len)
    }

    fn blocking_skip(&mut self, stream: Resource<InputStream>, len: u64) -> StreamResult<u64> {
        block_on(AsyncInput::blocking_skip(&mut *self.0, stream, len))
    }

    fn subscribe(
        &mut self,
        stream: Resource<InputStream>,
    ) -> wasmtime::Result<Resource<DynPollable>> {
        streams::HostInputStream::subscribe(&mut *self.0, stream)
    }
}

impl poll::Host for Io<'_> {
    fn poll(&mut self, pollables: Vec<Resource<DynPollable>>) -> wasmtime::Result<Vec<u32>> {
        block_on(async_poll::Host::poll(&mut *self.0, pollables))
    }
}

impl poll::HostPollable for Io<'_> {
    fn ready(&mut self, pollable: Resource<DynPollable>) -> wasmtime::Result<bool> {
        block_on(async_poll::HostPollable::ready(&mut *self.0, pollable))
    }

    fn block(&mut self, pollable: Resource<DynPollable>) -> wasmtime::Result<()> {
        block_on(async_poll::HostPollable::block(&mut *self.0, pollable))
    }

    fn drop(&mut self, pollable: Resource<DynPollable>) -> wasmtime::Result<()> {
        async_poll::HostPollable::drop(&mut *self.0, pollable)
    }
}

impl monotonic_clock::Host for Io<'_> {
    fn now(&mut self) -> wasmtime::Result<u64> {
        Ok(MONOTONIC_NOW)
    }

    fn resolution(&mut self) -> wasmtime::Result<u64> {
        Ok(MONOTONIC_RESOLUTION)
    }

    fn subscribe_instant(&mut self, when: u64) -> wasmtime::Result<Resource<DynPollable>> {
        self.subscribe_duration(when.saturating_sub(MONOTONIC_NOW))
    }

    fn subscribe_duration(&mut self, nanos: u64) -> wasmtime::Result<Resource<DynPollable>> {
        if nanos > 0 {
            wasmtime::bail!(
                "the guest waited {nanos} ns for its clock, which never moves in a decision"
            );
        }
        let ready = self.0.push(Ready)?;
        subscribe(self.0, ready)
    }
}

/// A pollable that is always ready.
struct Ready;

#[wasmtime_wasi::async_trait]
impl Pollable for Ready {
    async fn ready(&mut self) {}
}
