//! The world of a simulated life: one to three machines with their own
//! clocks (and, in some lives, one host name for all), the remote they
//! share, the world's time (the server's), and the step picked at each
//! moment from the table of `picker.rs`.

use super::*;
use picker::{Counts, Step};

pub struct World {
    pub rng: fastrand::Rng,
    /// The world's time: the server's clock, and the one remote prunes
    /// plan at (as the command does, from its lock's server time).
    pub now: u64,
    pub lives: Vec<Life>,
    /// Holds `remote/`, the shared folder remote (kept for its removal
    /// when the world ends).
    pub _remote_root: tempfile::TempDir,
    /// The shared remote: `remote/` there, or over the loopback sshd in the
    /// long mode's `FFSESSION_LIFE_SFTP` (the location of the SFTP
    /// server's folder, `FFSESSION_TEST_SFTP` of .ci/servers.sh).
    pub remote_loc: Location,
    /// Where its objects are on this machine's disk.
    pub remote_disk: PathBuf,
    pub steps: Vec<String>,
    pub counts: Counts,
    /// Machines whose copy or prune was killed while it may have held a
    /// lock on the remote: until that machine takes a lock again (which
    /// removes its dead one), another machine's prune may be refused.
    pub dead_locks: BTreeSet<usize>,
}

impl World {
    pub fn new(seed: u64) -> World {
        let mut rng = fastrand::Rng::with_seed(seed);
        // Every third life has one machine, every third two, every third
        // three; half the lives of several machines give them one host
        // name (any six seeds in a row live every kind).
        let n: u64 = 1 + seed % 3;
        let same_label = n > 1 && !(seed / 3).is_multiple_of(2);
        let remote_root = tmp().unwrap();
        let (remote_loc, remote_disk) = match std::env::var("FFSESSION_LIFE_SFTP") {
            Ok(base) => {
                let name = format!("life-{}-{seed}", std::process::id());
                let disk = Path::new(
                    base.strip_prefix("sftp://127.0.0.1/")
                        .expect("FFSESSION_LIFE_SFTP: an sftp://127.0.0.1/ location"),
                )
                .join(&name);
                let _ = fs::remove_dir_all(&disk);
                (Location::parse(&format!("{base}/{name}")).unwrap(), disk)
            }
            Err(_) => {
                let dir = remote_root.path().join("remote");
                (Location::Folder(dir.clone()), dir)
            }
        };
        let mut counts = Counts::default();
        counts.life(match n {
            1 => "one machine",
            2 => "two machines",
            _ => "three machines",
        });
        if same_label {
            counts.life("machines of one host name");
        }
        let mut lives = Vec::new();
        for i in 0..n {
            let label = if same_label {
                "laptop".to_owned()
            } else {
                format!("laptop-{}", (b'a' + i as u8) as char)
            };
            // The first machine's clock is right; the others run hours
            // ahead or behind (and may jump later).
            let offset = if i == 0 {
                0
            } else {
                let off = rng.i64(HOUR as i64..6 * HOUR as i64);
                if (seed + i).is_multiple_of(2) {
                    counts.life("a clock hours ahead");
                    off
                } else {
                    counts.life("a clock hours behind");
                    -off
                }
            };
            let machine = Machine {
                id: format!("{:032x}", rng.u128(..)),
                label,
            };
            let life_seed = seed.wrapping_mul(1_000_003).wrapping_add(i);
            lives.push(Life::new(
                life_seed,
                machine,
                remote_loc.clone(),
                1 + i * 1_000_000,
                offset,
            ));
        }
        World {
            rng,
            now: START,
            lives,
            _remote_root: remote_root,
            remote_loc,
            remote_disk,
            steps: Vec::new(),
            counts,
            dead_locks: BTreeSet::new(),
        }
    }

    /// The machines, for a failure's message.
    pub fn describe(&self) -> String {
        self.lives
            .iter()
            .enumerate()
            .map(|(i, l)| {
                format!(
                    "machine {i}: {} ({}), clock {:+} min",
                    l.machine.label,
                    &l.machine.id[..8],
                    l.offset / 60_000
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// Minutes to months between steps.
    fn advance(&mut self) {
        let r = self.rng.u32(0..110);
        self.now += match r {
            0..60 => self.rng.u64(60_000..2 * HOUR),
            60..90 => self.rng.u64(2 * HOUR..2 * DAY),
            _ => self.rng.u64(2 * DAY..40 * DAY),
        };
        for l in &mut self.lives {
            l.now = self.now.saturating_add_signed(l.offset);
        }
    }

    pub fn step(&mut self) {
        self.advance();
        let m = self.rng.usize(0..self.lives.len());
        let step = picker::pick(self.rng.u32(0..picker::total()));
        self.steps
            .push(format!("machine {m} at {}: {step:?}", self.lives[m].now));
        let started = std::time::Instant::now();
        let ran = self.run(step, m);
        self.lives[m].check_always();
        if let Some(what) = ran {
            self.counts.ran(step, started.elapsed());
            if !what.is_empty() {
                if let Some(last) = self.steps.last_mut() {
                    last.push_str(&format!(" ({what})"));
                }
            }
        } else if let Some(last) = self.steps.last_mut() {
            last.push_str(" (not now)");
        }
    }

    /// Run `step` on machine `m`: `None` if its moment is not right.
    fn run(&mut self, step: Step, m: usize) -> Option<String> {
        let other = self.rng.usize(0..self.lives.len());
        let l = &mut self.lives[m];
        let now = l.now;
        match step {
            Step::Start if !l.ff.running => {
                let upgrade = l.rng.u32(0..8) == 0;
                l.ff.start(upgrade, now);
                Some(if upgrade {
                    "upgrade".into()
                } else {
                    String::new()
                })
            }
            Step::Write if l.ff.running => {
                // Tabs come and go; now and then most of them at once.
                let n = l.ff.tabs.len();
                if l.rng.u32(0..20) == 0 && n > 2 {
                    l.ff.tabs.truncate(n / 4 + 1);
                } else if l.rng.bool() && n > 1 {
                    let at = l.rng.usize(0..n);
                    l.ff.tabs.remove(at);
                } else {
                    let k = l.rng.usize(1..4);
                    l.ff.open_tabs(k, now);
                }
                let n = l.ff.tabs.len();
                let seen = l.rng.usize(0..n);
                l.ff.visit(seen, now);
                l.ff.write(now);
                Some(format!("{} tabs", l.ff.tabs.len()))
            }
            Step::Quit if l.ff.running => {
                l.ff.quit(now);
                Some(String::new())
            }
            Step::CrashWriting if l.ff.running => {
                let cut = l.rng.bool();
                l.ff.crash_writing(now, cut);
                Some(if cut { "cut" } else { "header" }.into())
            }
            Step::Crash if l.ff.running => {
                l.ff.crash();
                Some(String::new())
            }
            Step::ClearHistory if !l.ff.running => {
                l.ff.clear_history();
                Some(String::new())
            }
            Step::Backup => {
                let prune = l.rng.bool().then(|| random_policy(&mut l.rng));
                l.backup(prune);
                Some(prune.map(|p| format!("--prune {p:?}")).unwrap_or_default())
            }
            Step::WatchCycle => {
                let policy = random_policy(&mut l.rng);
                l.watch_cycle(policy);
                Some(format!("{policy:?}"))
            }
            Step::Prune if l.store_dir.exists() => {
                let policy = random_policy(&mut l.rng);
                let before = l.observe().contents;
                let mut store = l.store();
                prune::apply(&mut store, &policy, &TimeZone::UTC, now).unwrap();
                drop(store);
                l.check_prune(&policy, &before);
                Some(format!("{policy:?}"))
            }
            Step::RestoreLatest => l.restore(true).then(String::new),
            Step::RestoreOne => l.restore(false).then(String::new),
            Step::Tidy => l.tidy().then(String::new),
            Step::BringBack => l.bring_back_archived().then(String::new),
            Step::Check => l.check().then(String::new),
            Step::FlipAndCheck => l.flip_and_check().then(String::new),
            Step::FullDiskBackup => {
                let budget = l.rng.u64(0..40_000);
                l.backup_on_full_disk(budget);
                Some(format!("{budget} bytes"))
            }
            Step::BackupKilled => {
                let k = l.rng.u64(1..12);
                l.backup_killed(k).then(|| format!("after {k} writes"))
            }
            Step::RestoreKilled => {
                let k = l.rng.u64(1..8);
                l.restore_killed(k).then(|| format!("after {k} writes"))
            }
            Step::ClockJump => {
                // Mostly back (a clock set right, a time zone undone), now
                // and then ahead.
                let by = l.rng.i64(10 * 60_000..3 * HOUR as i64);
                let by = if l.rng.u32(0..4) == 0 { by } else { -by };
                l.offset += by;
                l.now = self.now.saturating_add_signed(l.offset);
                Some(format!("{:+} min", by / 60_000))
            }
            Step::Copy => self.copy(m, None),
            Step::RemotePrune => self.remote_prune(m),
            Step::RemoteCheck => self.remote_check(),
            Step::RemoteRestore => self.remote_restore(),
            Step::CopyWithPrune => self.copy(m, Some((other, Meanwhile::Prune))),
            Step::CopyWithCheck => self.copy(m, Some((other, Meanwhile::Check))),
            Step::CopyWithRestore => self.copy(m, Some((other, Meanwhile::Restore))),
            Step::CopyAsleepWithPrune => self.copy(m, Some((other, Meanwhile::AsleepPrune))),
            Step::CopyKilled => self.copy_killed(m),
            Step::RemotePruneKilled => self.remote_prune_killed(m),
            _ => None,
        }
    }
}

/// What another machine does while a copy is paused mid-way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Meanwhile {
    /// Prunes the remote: refused, the copy's lock being live.
    Prune,
    /// A new machine checks the remote: no damage.
    Check,
    /// A new machine restores from the remote: a whole session.
    Restore,
    /// The copy sleeps past its lock's time (its lock stale on the
    /// server), and another machine prunes, with no margin or the default.
    AsleepPrune,
}

impl Drop for World {
    fn drop(&mut self) {
        // An SFTP remote's folder is the server's, not a temporary one.
        if !matches!(self.remote_loc, Location::Folder(_)) {
            let _ = fs::remove_dir_all(&self.remote_disk);
        }
    }
}

pub fn random_policy(rng: &mut fastrand::Rng) -> RetentionPolicy {
    if rng.bool() {
        return RetentionPolicy::DEFAULT;
    }
    RetentionPolicy {
        keep_last: rng.u32(0..6),
        keep_hourly: rng.u32(0..8),
        keep_daily: rng.u32(0..6),
        keep_weekly: rng.u32(0..4),
        keep_monthly: rng.u32(0..4),
        keep_yearly: rng.u32(0..3),
    }
}
