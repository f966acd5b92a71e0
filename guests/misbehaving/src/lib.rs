//! A pvc-protection guest that misbehaves on purpose, for the runtime's fault
//! tests (epoch deadline, memory cap, trap, result size). The PVC name picks
//! the behaviour; see [`Behaviour::for_pvc`].

use rekon_guest::model::{PvcAction, PvcDecision, Target};
use rekon_guest::projection::pvc::PvcInput;

/// Bytes per allocation of the memory bomb.
const BOMB_CHUNK: usize = 1 << 20;

/// The huge result: this many actions naming a PVC of [`HUGE_NAME`] bytes (8 MiB).
const HUGE_ACTIONS: usize = 8;
const HUGE_NAME: usize = 1 << 20;

/// What the guest does for one input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Behaviour {
    /// Spin forever: only the host's epoch deadline stops it.
    Loop,
    /// Allocate 1 MiB chunks, keeping them alive, until memory runs out.
    Bomb,
    /// Panic, which traps the component.
    Panic,
    /// Return a decision of several MiB.
    Huge,
    /// Decide "nothing to do", like a well-behaved guest.
    Behave,
}

impl Behaviour {
    /// `loop`, `bomb`, `panic` and `huge` select their behaviour; any other
    /// name behaves.
    pub fn for_pvc(pvc_name: &str) -> Self {
        match pvc_name {
            "loop" => Self::Loop,
            "bomb" => Self::Bomb,
            "panic" => Self::Panic,
            "huge" => Self::Huge,
            _ => Self::Behave,
        }
    }
}

/// Run the behaviour the input's PVC name selects.
pub fn decide(input: &PvcInput) -> PvcDecision {
    match Behaviour::for_pvc(&input.pvc.name) {
        Behaviour::Loop => spin(),
        Behaviour::Bomb => exhaust_memory(),
        Behaviour::Panic => panic!(
            "misbehaving guest: panic requested by PVC {:?}",
            input.pvc.name
        ),
        Behaviour::Huge => huge_result(),
        Behaviour::Behave => PvcDecision::Actions(Vec::new()),
    }
}

fn huge_result() -> PvcDecision {
    let target = Target {
        name: "x".repeat(HUGE_NAME),
        ..Target::default()
    };
    PvcDecision::Actions(vec![PvcAction::AddFinalizer(target); HUGE_ACTIONS])
}

fn spin() -> ! {
    let mut turns: u64 = 0;
    loop {
        // black_box keeps the loop from being optimised into a trap or away.
        turns = std::hint::black_box(turns.wrapping_add(1));
    }
}

fn exhaust_memory() -> ! {
    let mut kept: Vec<Vec<u8>> = Vec::new();
    loop {
        // Touch every chunk so the pages are really committed, and keep it.
        let chunk = vec![1u8; BOMB_CHUNK];
        kept.push(std::hint::black_box(chunk));
    }
}

#[cfg(target_arch = "wasm32")]
mod component {
    wit_bindgen::generate!({
        path: "../../wit",
        world: "rekon:reconcile/pvc-protection@0.2.0",
        with: {
            "rekon:reconcile/types@0.2.0": rekon_guest::bindings::rekon::reconcile0_2_0::types,
            "rekon:reconcile/log@0.2.0": rekon_guest::bindings::rekon::reconcile0_2_0::log,
        },
    });

    rekon_guest::impl_contract_conversions!(v0_2_0: pvc = exports::rekon::reconcile0_2_0::pvc_decider);

    use exports::rekon::reconcile0_2_0::pvc_decider::{Guest, PvcDecision, PvcInput};
    use rekon_guest::projection::pvc;

    struct Misbehaving;

    impl Guest for Misbehaving {
        fn decide(input: PvcInput) -> PvcDecision {
            let input = pvc::PvcInput::from(input);
            crate::decide(&input).into()
        }
    }

    export!(Misbehaving);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(pvc_name: &str) -> PvcInput {
        let mut input = PvcInput::default();
        input.pvc.name = pvc_name.into();
        input
    }

    #[test]
    fn names_select_behaviours() {
        assert_eq!(Behaviour::for_pvc("loop"), Behaviour::Loop);
        assert_eq!(Behaviour::for_pvc("bomb"), Behaviour::Bomb);
        assert_eq!(Behaviour::for_pvc("panic"), Behaviour::Panic);
        assert_eq!(Behaviour::for_pvc("huge"), Behaviour::Huge);
        assert_eq!(Behaviour::for_pvc("data"), Behaviour::Behave);
        assert_eq!(Behaviour::for_pvc("Loop"), Behaviour::Behave);
        assert_eq!(Behaviour::for_pvc(""), Behaviour::Behave);
    }

    #[test]
    fn other_names_decide_nothing() {
        assert_eq!(decide(&input("data")), PvcDecision::Actions(vec![]));
    }

    #[test]
    fn huge_name_returns_megabytes() {
        let PvcDecision::Actions(actions) = decide(&input("huge")) else {
            panic!("expected actions");
        };
        assert_eq!(actions.len(), HUGE_ACTIONS);
    }

    #[test]
    #[should_panic(expected = "panic requested by PVC \"panic\"")]
    fn panic_name_panics() {
        decide(&input("panic"));
    }
}
