//! The built ephemeral-volume component, bound through [`BindWorld`] exactly as
//! the runtime binds every world, answers every case file of the reference guest.
//! (`make guests` builds it; `REKON_GUEST_DIR` or `CARGO_TARGET_DIR` locate it.)

use std::path::{Path, PathBuf};

use rekon_contract::current::log;
use rekon_contract::{BindWorld, EphemeralVolumeWorld};
use rekon_guest::cases::{check, read_dir, run_all};
use rekon_guest::ephemeral::{VolumeDecision, VolumeInput};
use wasmtime::component::{Component, HasSelf, Linker, ResourceTable};
use wasmtime::{Engine, Store};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

/// A store with WASI granting nothing and a log that drops messages.
struct State {
    wasi: WasiCtx,
    table: ResourceTable,
}

impl WasiView for State {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl log::Host for State {
    fn log(&mut self, _: log::Level, _: String) {}
}

fn new_state() -> State {
    State {
        wasi: WasiCtx::builder().build(),
        table: ResourceTable::new(),
    }
}

fn built_guest() -> PathBuf {
    let dir = std::env::var_os("REKON_GUEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            std::env::var_os("CARGO_TARGET_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"))
                .join("wasm32-wasip2/guest")
        });
    let path = dir.join("rekon_guest_ephemeral_volume.wasm");
    assert!(
        path.is_file(),
        "{}: run `make guests` first",
        path.display()
    );
    path
}

#[test]
fn component_answers_every_case() {
    let engine = Engine::default();
    let mut linker = Linker::<State>::new(&engine);
    wasmtime_wasi::p2::add_to_linker_sync(&mut linker).unwrap();
    log::add_to_linker::<State, HasSelf<State>>(&mut linker, |state| state).unwrap();
    let component = Component::from_file(&engine, built_guest()).unwrap();
    let pre = linker.instantiate_pre(&component).unwrap();

    // The world is new in 0.2.0: no 0.1.0 binding exists.
    assert!(EphemeralVolumeWorld::bind::<State>("0.1.0", pre.clone()).is_none());
    let binding = EphemeralVolumeWorld::bind::<State>("0.2.0", pre)
        .expect("0.2.0 is bound")
        .unwrap();
    assert_eq!(binding.version().version, "0.2.0");

    let cases = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../guests/ephemeral-volume/cases");
    let counts = run_all(&read_dir(&cases), |case| {
        check::<VolumeInput, VolumeDecision>(case, |input| {
            let mut store = Store::new(&engine, new_state());
            binding
                .decide(&mut store, input.clone())
                .unwrap_or_else(|err| panic!("{}: {err:?}", case.name))
        })
    });
    assert!(counts["decide"] >= 20, "{counts:?}");
}
