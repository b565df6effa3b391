//! `stats --plot`: a chart a person can read.

use std::fs;

use ffsession_gen::Spec;

use crate::common::Run;
use crate::common::{ok_output, seeded_session, session, session_of, TestEnv};

const T0: u64 = 1_795_000_000_000;
const HOUR: u64 = 3_600_000;

/// The values of attribute `name` of every `<tag ...>` element in `svg`.
fn attrs(svg: &str, tag: &str, name: &str) -> Vec<String> {
    svg.split(&format!("<{tag} "))
        .skip(1)
        .filter_map(|el| {
            let el = &el[..el.find('>').unwrap_or(el.len())];
            let at = el.find(&format!(" {name}=\"")).or_else(|| {
                el.starts_with(&format!("{name}=\""))
                    .then_some(0)
                    .map(|_| 0)
            })?;
            let rest = &el[at..];
            let start = rest.find('"')? + 1;
            let end = start + rest[start..].find('"')?;
            Some(rest[start..end].to_owned())
        })
        .collect()
}

/// Every `<text ...>CONTENT</text>` as (y, content).
fn texts(svg: &str) -> Vec<(f64, String)> {
    svg.split("<text ")
        .skip(1)
        .filter_map(|el| {
            let y = attrs(&format!("<text {el}"), "text", "y")
                .pop()?
                .parse()
                .ok()?;
            let content = el.split_once('>')?.1.split_once("</text>")?.0;
            Some((y, content.trim().to_owned()))
        })
        .collect()
}

/// `stats ARGS --plot CHART` of `profile`'s test store, which must succeed:
/// the chart, and its time marks (texts that start with a year), two to
/// eight of them.
fn plot_marks(
    env: &TestEnv,
    profile: &std::path::Path,
    args: &[&str],
    chart: &std::path::Path,
) -> (String, Vec<String>) {
    ok_output(
        env.store_cmd(profile)
            .arg("stats")
            .args(args)
            .arg("--plot")
            .arg(chart),
    );
    let svg = fs::read_to_string(chart).unwrap();
    let labels: Vec<String> = texts(&svg)
        .into_iter()
        .map(|(_, t)| t)
        .filter(|t| t.starts_with("20"))
        .collect();
    assert!(labels.len() >= 2 && labels.len() <= 8, "{labels:?}");
    (svg, labels)
}

fn num(s: &str) -> f64 {
    s.parse().unwrap()
}

#[test]
fn the_plot_keeps_its_legend_off_the_data_whole_tab_counts_and_equal_series_apart() {
    let env = TestEnv::new();
    let profile = env.empty_profile();
    let backups = profile.join("sessionstore-backups");
    // Two files with the same tab counts at each backup, and an upgrade copy
    // whose session is a day older than the others though backed up last.
    for (n, tabs) in [(0, 3), (1, 5), (2, 4)] {
        for (name, seed) in [("recovery.jsonlz4", 1), ("previous.jsonlz4", 2)] {
            let g = seeded_session(tabs, T0 + n * HOUR, seed);
            fs::write(backups.join(name), &g.packed).unwrap();
        }
        ok_output(env.store_cmd(&profile).arg("backup"));
    }
    for name in ["recovery.jsonlz4", "previous.jsonlz4"] {
        fs::remove_file(backups.join(name)).unwrap();
    }
    let old = session(Spec {
        tabs: 2,
        last_update: T0 - 24 * HOUR,
        ..Spec::default()
    });
    fs::write(backups.join("upgrade.jsonlz4-20261101000000"), &old.packed).unwrap();
    ok_output(env.store_cmd(&profile).arg("backup"));

    let chart = env.path().join("tabs.svg");
    ok_output(
        env.store_cmd(&profile)
            .arg("stats")
            .arg("--plot")
            .arg(&chart),
    );
    let svg = fs::read_to_string(&chart).unwrap();
    let texts = texts(&svg);
    fs::copy(&chart, "/tmp/fh_stats.svg").ok();

    // Where the data is: every marker and line point right of the tab axis
    // (the legend's samples are at its left, under it).
    let axis_x = 75.0;
    let mut data_y: Vec<f64> = attrs(&svg, "circle", "cx")
        .iter()
        .zip(attrs(&svg, "circle", "cy"))
        .filter(|(x, _)| num(x) > axis_x)
        .map(|(_, y)| num(&y))
        .collect();
    for points in attrs(&svg, "polyline", "points") {
        for p in points.split_whitespace() {
            let (x, y) = p.split_once(',').unwrap();
            if num(x) > axis_x {
                data_y.push(num(y));
            }
        }
    }
    assert!(data_y.len() >= 9, "{svg}");
    let lowest_data = data_y.iter().copied().fold(f64::MIN, f64::max);
    // The legend names each file, below everything the plot draws.
    for file in [
        "sessionstore-backups/recovery.jsonlz4",
        "sessionstore-backups/previous.jsonlz4",
        "sessionstore-backups/upgrade.jsonlz4-20261101000000",
    ] {
        let (y, _) = texts
            .iter()
            .find(|(_, t)| t == file)
            .unwrap_or_else(|| panic!("no legend for {file}: {texts:?}"));
        assert!(
            *y > lowest_data,
            "{file} at y {y}, data down to {lowest_data}"
        );
    }

    // The tab axis counts whole tabs.
    let numbers: Vec<&str> = texts
        .iter()
        .map(|(_, t)| t.as_str())
        .filter(|t| t.parse::<f64>().is_ok())
        .collect();
    assert!(numbers.len() >= 3, "{texts:?}");
    for n in &numbers {
        assert!(n.parse::<u64>().is_ok(), "tab axis label {n:?}");
    }

    // The axis says which time it is.
    assert!(
        texts.iter().any(|(_, t)| t.starts_with("session time")),
        "{texts:?}"
    );

    // The two files with equal counts: at each point, both a circle and a
    // triangle (each series its own marker), and their lines drawn apart
    // (one solid, one dashed: more segments).
    let circles: Vec<(f64, f64)> = attrs(&svg, "circle", "cx")
        .iter()
        .zip(attrs(&svg, "circle", "cy"))
        .map(|(x, y)| (num(x), num(&y)))
        .collect();
    let triangles = attrs(&svg, "polygon", "points");
    assert!(triangles.len() >= 3, "{svg}");
    let mut shared = 0;
    for t in &triangles {
        let pts: Vec<(f64, f64)> = t
            .split_whitespace()
            .map(|p| {
                let (x, y) = p.split_once(',').unwrap();
                (num(x), num(y))
            })
            .collect();
        let (cx, cy) = (
            pts.iter().map(|p| p.0).sum::<f64>() / pts.len() as f64,
            pts.iter().map(|p| p.1).sum::<f64>() / pts.len() as f64,
        );
        if circles
            .iter()
            .any(|&(x, y)| (x - cx).abs() < 4.0 && (y - cy).abs() < 4.0)
        {
            shared += 1;
        }
    }
    assert!(shared >= 3, "equal counts drawn as one mark: {shared}");
    let polylines = attrs(&svg, "polyline", "points").len();
    assert!(polylines > 4, "{polylines} polylines: no dashed line");

    // By the session's own time: the upgrade copy, backed up last, is a day
    // older than the rest, so the points span more than a day, and its
    // square is the leftmost mark.
    let x_labels: Vec<&str> = texts
        .iter()
        .map(|(_, t)| t.as_str())
        .filter(|t| t.starts_with("20") && t.len() > 10)
        .collect();
    assert!(x_labels.len() >= 2, "{texts:?}");
    assert_ne!(
        x_labels[0][..10],
        x_labels[x_labels.len() - 1][..10],
        "{x_labels:?}"
    );
}

#[test]
fn list_search_and_history_show_the_session_s_own_time() {
    let env = TestEnv::new();
    let profile = env.empty_profile();
    let backups = profile.join("sessionstore-backups");
    // A session last updated on 2026-11-18 at 11:06:40 UTC, backed up now.
    let g = session_of(3, T0);
    fs::write(backups.join("recovery.jsonlz4"), &g.packed).unwrap();
    ok_output(env.store_cmd(&profile).arg("backup"));
    let session_time = "2026-11-18 11:06:40 UTC";

    let list = String::from_utf8(ok_output(env.store_cmd(&profile).arg("list")).stdout).unwrap();
    let line = list.lines().next().unwrap();
    assert!(line.contains(&format!("session {session_time}")), "{list}");
    let json = crate::common::ok_json(env.store_cmd(&profile).args(["list", "--json"]));
    assert_eq!(json[0]["last_update_ms"], T0);

    // A tab of it, as the index has it.
    let all = crate::common::ok_json(
        env.store_cmd(&profile)
            .args(["search", "example", "--json"]),
    );
    let url = all[0]["url"].as_str().unwrap().to_owned();
    let hits = crate::common::ok_json(env.store_cmd(&profile).args(["search", &url, "--json"]));
    assert_eq!(hits[0]["last_seen_ms"], T0, "{hits}");
    let text = String::from_utf8(ok_output(env.store_cmd(&profile).args(["search", &url])).stdout)
        .unwrap();
    assert!(
        text.contains(&format!("seen {session_time} .. {session_time}")),
        "{text}"
    );
    let history = crate::common::ok_json(env.store_cmd(&profile).args(["history", &url, "--json"]));
    assert_eq!(history[0]["to_ms"], T0, "{history}");
}

/// `stats --since` (a duration back from now, or a date) leaves out older
/// sessions, from the table, the JSON and the chart; the chart's time axis
/// is marked at round times, labelled no finer than minutes.
#[test]
fn stats_since_leaves_out_old_sessions_and_the_time_axis_is_readable() {
    let env = TestEnv::new();
    let profile = env.empty_profile();
    let backups = profile.join("sessionstore-backups");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    // A months-old upgrade copy, then two sessions of the last hours.
    let old = session(Spec {
        tabs: 2,
        last_update: now - 120 * 24 * HOUR,
        ..Spec::default()
    });
    fs::write(backups.join("upgrade.jsonlz4-20260701000000"), &old.packed).unwrap();
    ok_output(env.store_cmd(&profile).arg("backup"));
    fs::remove_file(backups.join("upgrade.jsonlz4-20260701000000")).unwrap();
    for (hours_ago, tabs) in [(5, 3), (2, 6)] {
        let g = session(Spec {
            tabs,
            last_update: now - hours_ago * HOUR,
            ..Spec::default()
        });
        fs::write(backups.join("recovery.jsonlz4"), &g.packed).unwrap();
        ok_output(env.store_cmd(&profile).arg("backup"));
    }
    let tabs = |args: &[&str]| -> Vec<u64> {
        let v = crate::common::ok_json(
            env.store_cmd(&profile)
                .arg("stats")
                .args(args)
                .arg("--json"),
        );
        v["snapshots"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["tabs"].as_u64().unwrap())
            .collect()
    };
    assert_eq!(tabs(&[]), [2, 3, 6]);
    assert_eq!(tabs(&["--since", "7d"]), [3, 6]);
    assert_eq!(tabs(&["--since", "3h"]), [6]);
    assert_eq!(tabs(&["--since", "2000-01-01"]), [2, 3, 6]);
    let text = crate::common::ok_stdout(env.store_cmd(&profile).args(["stats", "--since", "7d"]));
    assert!(!text.contains("upgrade.jsonlz4"), "{text}");
    // Nothing that recent: one clear error; a bad value: a usage error.
    let err = crate::common::expect_error(env.store_cmd(&profile).args(["stats", "--since", "1m"]));
    assert!(
        err.contains("no session since") && err.contains("hint:"),
        "{err}"
    );
    let out = env
        .store_cmd(&profile)
        .args(["stats", "--since", "soon"])
        .run();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("7d"));

    // The chart of the last 7 days spans hours, not months: its time marks
    // are round hours or minutes of the last day, none months old.
    let chart = env.path().join("week.svg");
    let (svg, labels) = plot_marks(&env, &profile, &["--since", "7d"], &chart);
    let day_ago = jiff::Timestamp::from_millisecond((now - 30 * HOUR) as i64)
        .unwrap()
        .to_zoned(jiff::tz::TimeZone::UTC)
        .strftime("%Y-%m-%d %H:%M")
        .to_string();
    for l in &labels {
        // `2026-11-27 18:00`: no seconds, no zone (the axis title says it).
        assert_eq!(l.len(), 16, "{l:?} in {labels:?}");
        assert!(l.ends_with("0"), "{l:?} is not a round time");
        assert!(*l >= day_ago, "{l:?} is older than the data: {labels:?}");
    }
    assert!(
        texts(&svg)
            .iter()
            .any(|(_, t)| t.starts_with("session time, UTC")),
        "{svg}"
    );
    // Without --since, the months-old copy stretches the axis: month or day
    // marks, still no seconds.
    let (_, labels) = plot_marks(&env, &profile, &[], &chart);
    assert!(labels.iter().all(|l| l.len() <= 10), "{labels:?}");
}
