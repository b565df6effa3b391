//! What a step of the simulated life does: every kind of step and fault,
//! each with its weight, drawn from one table (so no kind can sit outside
//! the draw), and the count of each kind that ran, which a run prints and
//! which must show no zero.

use std::collections::BTreeMap;

/// Defines [`Step`] and [`ALL`] from one list of the kinds of step: no kind
/// can be in one and not in the other.
macro_rules! steps {
    ($($(#[$doc:meta])* $v:ident,)*) => {
        /// Every kind of step. A kind whose moment is not right (Firefox is
        /// not running for a write, the remote holds nothing yet) does
        /// nothing and is not counted.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Step {
            $($(#[$doc])* $v,)*
        }

        /// Every kind of step.
        pub const ALL: &[Step] = &[$(Step::$v),*];
    };
}

steps! {
    // Firefox, on one machine.
    Start,
    Write,
    Quit,
    CrashWriting,
    Crash,
    ClearHistory,
    // ffsession on one machine.
    Backup,
    WatchCycle,
    Prune,
    RestoreLatest,
    RestoreOne,
    Tidy,
    BringBack,
    Check,
    // Faults on one machine.
    FlipAndCheck,
    FullDiskBackup,
    BackupKilled,
    RestoreKilled,
    ClockJump,
    // The shared remote.
    Copy,
    RemotePrune,
    RemoteCheck,
    RemoteRestore,
    // Two machines at once: one's copy paused mid-way while another acts.
    CopyWithPrune,
    CopyWithCheck,
    CopyWithRestore,
    /// A copy paused past its lock's time (a laptop asleep: its lock made
    /// stale on the server), another machine prunes meanwhile.
    CopyAsleepWithPrune,
    // Kills (SIGKILL of a child process) on the remote.
    CopyKilled,
    RemotePruneKilled,
}

/// Each kind and its weight: the draw is over their sum.
pub const TABLE: &[(Step, u32)] = &[
    (Step::Start, 8),
    (Step::Write, 25),
    (Step::Quit, 7),
    (Step::CrashWriting, 2),
    (Step::Crash, 2),
    (Step::ClearHistory, 1),
    (Step::Backup, 13),
    (Step::WatchCycle, 13),
    (Step::Prune, 4),
    (Step::RestoreLatest, 4),
    (Step::RestoreOne, 3),
    (Step::Tidy, 4),
    (Step::BringBack, 4),
    (Step::Check, 2),
    (Step::FlipAndCheck, 2),
    (Step::FullDiskBackup, 3),
    (Step::BackupKilled, 2),
    (Step::RestoreKilled, 1),
    (Step::ClockJump, 2),
    (Step::Copy, 4),
    (Step::RemotePrune, 3),
    (Step::RemoteCheck, 1),
    (Step::RemoteRestore, 1),
    (Step::CopyWithPrune, 2),
    (Step::CopyWithCheck, 1),
    (Step::CopyWithRestore, 1),
    (Step::CopyAsleepWithPrune, 2),
    (Step::CopyKilled, 2),
    (Step::RemotePruneKilled, 2),
];

/// The sum of the weights: draws are `0..total()`.
pub fn total() -> u32 {
    TABLE.iter().map(|(_, w)| w).sum()
}

/// The kind a draw in `0..total()` picks.
pub fn pick(draw: u32) -> Step {
    let mut left = draw;
    for (step, weight) in TABLE {
        if left < *weight {
            return *step;
        }
        left -= weight;
    }
    panic!("draw {draw} is outside 0..{}", total())
}

/// How often each step kind ran, and each kind of life (machines, clocks,
/// names), over one or many lives.
#[derive(Debug, Default, Clone)]
pub struct Counts {
    pub steps: BTreeMap<Step, u64>,
    /// The time each kind took, in all (ms of this machine's clock).
    pub millis: BTreeMap<Step, u64>,
    /// Kinds of life and outcomes worth knowing ("a copy sent again what a
    /// prune removed"): the life kinds must not be zero either.
    pub lives: BTreeMap<&'static str, u64>,
    pub outcomes: BTreeMap<&'static str, u64>,
}

/// The kinds of life a run must have lived at least once.
pub const LIFE_KINDS: &[&str] = &[
    "one machine",
    "two machines",
    "three machines",
    "machines of one host name",
    "a clock hours ahead",
    "a clock hours behind",
];

impl Counts {
    pub fn ran(&mut self, step: Step, took: std::time::Duration) {
        *self.steps.entry(step).or_default() += 1;
        *self.millis.entry(step).or_default() += took.as_millis() as u64;
    }

    pub fn life(&mut self, kind: &'static str) {
        *self.lives.entry(kind).or_default() += 1;
    }

    pub fn outcome(&mut self, what: &'static str) {
        *self.outcomes.entry(what).or_default() += 1;
    }

    pub fn add(&mut self, other: &Counts) {
        for (k, n) in &other.steps {
            *self.steps.entry(*k).or_default() += n;
        }
        for (k, n) in &other.millis {
            *self.millis.entry(*k).or_default() += n;
        }
        for (k, n) in &other.lives {
            *self.lives.entry(k).or_default() += n;
        }
        for (k, n) in &other.outcomes {
            *self.outcomes.entry(k).or_default() += n;
        }
    }

    /// The kinds of step and of life that never ran.
    pub fn zeros(&self) -> Vec<String> {
        let mut out: Vec<String> = TABLE
            .iter()
            .filter(|(s, _)| self.steps.get(s).copied().unwrap_or(0) == 0)
            .map(|(s, _)| format!("{s:?}"))
            .collect();
        out.extend(
            LIFE_KINDS
                .iter()
                .filter(|k| self.lives.get(*k).copied().unwrap_or(0) == 0)
                .map(|k| (*k).to_owned()),
        );
        out
    }

    /// The table: kind, count.
    pub fn table(&self) -> String {
        let mut out = String::from("| step or fault | ran | seconds |\n| --- | ---: | ---: |\n");
        for (s, _) in TABLE {
            out.push_str(&format!(
                "| {s:?} | {} | {:.1} |\n",
                self.steps.get(s).copied().unwrap_or(0),
                self.millis.get(s).copied().unwrap_or(0) as f64 / 1000.0
            ));
        }
        out.push_str("\n| kind of life | lives |\n| --- | ---: |\n");
        for k in LIFE_KINDS {
            out.push_str(&format!(
                "| {k} | {} |\n",
                self.lives.get(k).copied().unwrap_or(0)
            ));
        }
        out.push_str("\n| outcome | times |\n| --- | ---: |\n");
        for (k, n) in &self.outcomes {
            out.push_str(&format!("| {k} | {n} |\n"));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every draw picks a kind, every kind is picked by some draw, and no
    /// kind is listed twice: nothing sits outside the draw.
    #[test]
    fn the_table_covers_the_draw_and_every_kind() {
        let mut picked = std::collections::BTreeSet::new();
        for draw in 0..total() {
            picked.insert(pick(draw));
        }
        let listed: std::collections::BTreeSet<Step> = TABLE.iter().map(|(s, _)| *s).collect();
        assert_eq!(listed.len(), TABLE.len(), "a kind is listed twice");
        assert_eq!(picked, listed);
        let every: std::collections::BTreeSet<Step> = ALL.iter().copied().collect();
        assert_eq!(every, listed, "a kind of step is not in the table");
        assert!(TABLE.iter().all(|(_, w)| *w > 0));
        // A draw past the table is a bug of the caller, said at once.
        let hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let past = std::panic::catch_unwind(|| pick(total()));
        std::panic::set_hook(hook);
        assert!(past.is_err());
    }
}
