//! Each (world, contract version) bound once: instantiate a component's
//! generated `*Pre` and call its decision, model in, model out.
//!
//! [`bind_world!`] writes the [`WorldBinding`] of every version of one world and
//! its [`BindWorld`] (which version a component gets); the runtime calls through
//! `dyn WorldBinding<W, _>` and never matches on a version. A new version is one
//! more entry in a world's `versions: [...]`; a new world is one more invocation.

use std::sync::Arc;

use wasmtime::Store;
use wasmtime::component::InstancePre;

use crate::bindings::{ContractVersion, v0_1_0, v0_2_0};
use crate::world::{
    PvcProtectionWorld, ResourceClaimDecision, ResourceClaimInput, ResourceClaimWorld, WitWorld,
};

/// Where a decision failed: instantiation failures that are not the guest's
/// fault (a full instance pool) are reported apart from traps in the call.
#[derive(Debug)]
pub enum CallError {
    Instantiate(wasmtime::Error),
    Call(wasmtime::Error),
}

/// A component of world `W` bound at one contract version.
pub trait WorldBinding<W: WitWorld, T: 'static>: Send + Sync {
    /// The contract version the component exports.
    fn version(&self) -> &'static ContractVersion;
    /// A fresh instance in `store`, then the decision for `input`.
    fn decide(&self, store: &mut Store<T>, input: W::Input) -> Result<W::Decision, CallError>;
}

/// A world whose versions the host binds.
pub trait BindWorld: WitWorld + Sized {
    /// The contract versions that have this world, newest first.
    const VERSIONS: &'static [&'static ContractVersion];

    /// Binds `pre` (a component exporting this world at `version`). `None` when
    /// the host does not bind that version.
    #[allow(clippy::type_complexity)]
    fn bind<T: Send + 'static>(
        version: &str,
        pre: InstancePre<T>,
    ) -> Option<wasmtime::Result<Arc<dyn WorldBinding<Self, T>>>>;
}

/// The generated `*Pre` of one version, with that version's constant.
pub(crate) struct Bound<P> {
    pub(crate) pre: P,
    pub(crate) version: &'static ContractVersion,
}

/// Binds a world at every listed version (each with its generated accessor of the
/// exported interface). `call` is either `{ function }` (the world's input and
/// decision, converted with `From`), or one function per variant of the world's
/// input enum, answered by the same variant of its decision enum.
macro_rules! bind_world {
    (
        world: $world:ty,
        pre: $module:ident :: $pre:ident,
        versions: [$($version:ident => $iface:ident),+ $(,)?],
        call: $call:tt $(,)?
    ) => {
        $(
            impl<T: Send + 'static> WorldBinding<$world, T> for Bound<$version::$module::$pre<T>> {
                fn version(&self) -> &'static ContractVersion {
                    self.version
                }

                fn decide(
                    &self,
                    store: &mut Store<T>,
                    input: <$world as WitWorld>::Input,
                ) -> Result<<$world as WitWorld>::Decision, CallError> {
                    let guest = self.pre.instantiate(&mut *store).map_err(CallError::Instantiate)?;
                    let exports = guest.$iface();
                    bind_world!(@call exports, store, input, $call).map_err(CallError::Call)
                }
            }
        )+

        impl BindWorld for $world {
            const VERSIONS: &'static [&'static ContractVersion] = &[$(&$version::VERSION),+];

            fn bind<T: Send + 'static>(
                version: &str,
                pre: InstancePre<T>,
            ) -> Option<wasmtime::Result<Arc<dyn WorldBinding<Self, T>>>> {
                $(
                    if version == $version::VERSION.version {
                        return Some($version::$module::$pre::new(pre).map(|pre| {
                            Arc::new(Bound { pre, version: &$version::VERSION })
                                as Arc<dyn WorldBinding<Self, T>>
                        }));
                    }
                )+
                None
            }
        }
    };
    (@call $exports:ident, $store:ident, $input:ident, { $function:ident }) => {
        $exports.$function(&mut *$store, &$input.into()).map(Into::into)
    };
    (@call $exports:ident, $store:ident, $input:ident,
        { $in_enum:ident -> $out_enum:ident { $($variant:ident => $function:ident),+ $(,)? } }
    ) => {
        match $input {
            $($in_enum::$variant(input) => $exports
                .$function(&mut *$store, &input.into())
                .map(|decision| $out_enum::$variant(decision.into())),)+
        }
    };
}
pub(crate) use bind_world;

bind_world! {
    world: PvcProtectionWorld,
    pre: pvc::PvcProtectionPre,
    versions: [
        v0_2_0 => rekon_reconcile0_2_0_pvc_decider,
        v0_1_0 => rekon_reconcile_pvc_decider,
    ],
    call: { call_decide },
}

bind_world! {
    world: ResourceClaimWorld,
    pre: claim::ResourceClaimPre,
    versions: [
        v0_2_0 => rekon_reconcile0_2_0_claim_decider,
        v0_1_0 => rekon_reconcile_claim_decider,
    ],
    call: {
        ResourceClaimInput -> ResourceClaimDecision {
            Pod => call_decide_pod,
            Claim => call_decide_claim,
        }
    },
}

/// Generic code run once per world: see [`visit_worlds`].
pub trait WorldVisitor {
    fn visit<W: BindWorld>(&mut self);
}

/// Every world the host binds, in this order. The one list of worlds: the
/// runtime, the module manager and the CLI derive theirs from it. Adding a
/// world is one line here.
pub fn visit_worlds(visitor: &mut impl WorldVisitor) {
    visitor.visit::<PvcProtectionWorld>();
    visitor.visit::<ResourceClaimWorld>();
    visitor.visit::<crate::EphemeralVolumeWorld>();
    visitor.visit::<crate::ControllerWorld>();
}
