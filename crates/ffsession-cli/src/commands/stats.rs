//! `ffsession stats`: windows and tabs over time, from the store's snapshots.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::PathBuf;

use anyhow::{anyhow, Result};
use clap::Args;
use ffsession::store::{SnapshotInfo, SnapshotStatus};
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::element::DashedPathElement;
use plotters::prelude::*;

use crate::cli::GlobalArgs;
use crate::error::UserError;
use crate::fmt;

/// Show how many windows and tabs each snapshot in the profile's backup store
/// held, by the session's own time (Firefox's last update of it; the backup
/// time when the file does not say), oldest first: that time, when it was
/// backed up, the source file, windows, tabs and status. `--plot` draws the
/// tab counts over the session's own time as an SVG chart, one line per
/// source file (each with its own marker and dash, so equal counts stay
/// apart), corrupt snapshots marked in red at zero, the legend below, the
/// time axis marked at round times (minutes, hours, days or months, as the
/// span asks). --since leaves out older sessions (months-old upgrade copies,
/// say), from the table and the chart.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  ffsession stats                    the table, oldest first
  ffsession stats --json             the same as JSON
  ffsession stats --plot tabs.svg    also draw the tab counts over time
  ffsession stats --since 7d --plot week.svg     only the last 7 days
  ffsession stats --since 2026-11-01             sessions since that day (local time)")]
pub struct StatsArgs {
    /// Only sessions last updated since this date (YYYY-MM-DD, local time),
    /// instant (RFC 3339), or this long ago (a duration: 7d, 12h, 2w, 90m)
    #[arg(long, value_name = "DATE|DURATION", value_parser = since_arg)]
    pub since: Option<u64>,

    /// Print JSON instead of text
    #[arg(long)]
    pub json: bool,

    /// Also write the tab-count timeline as an SVG chart to FILE
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
}

/// One row of `--json`.
#[derive(serde::Serialize)]
struct Row<'s> {
    id: i64,
    taken_at_ms: u64,
    /// The session's own `session.lastUpdate`, when it has one.
    last_update_ms: Option<u64>,
    file_name: &'s str,
    windows: Option<u64>,
    /// Spaces, for one of Zen's files (which has no windows).
    #[serde(skip_serializing_if = "Option::is_none")]
    spaces: Option<u64>,
    tabs: Option<u64>,
    status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'s str>,
}

impl<'s> Row<'s> {
    fn of(s: &'s SnapshotInfo) -> Row<'s> {
        let reason = match &s.status {
            SnapshotStatus::Ok => None,
            SnapshotStatus::Corrupt { reason } => Some(reason.as_str()),
        };
        Row {
            id: s.id.0,
            taken_at_ms: s.taken_at_ms,
            last_update_ms: s.last_update_ms,
            file_name: &s.file_name,
            windows: s.counts.map(|c| c.windows).filter(|_| !s.kind.is_zen()),
            spaces: s.counts.map(|c| c.windows).filter(|_| s.kind.is_zen()),
            tabs: s.counts.map(|c| c.tabs),
            status: if reason.is_some() { "corrupt" } else { "ok" },
            reason,
        }
    }
}

pub fn run(global: &GlobalArgs, args: StatsArgs) -> Result<()> {
    let (_, mut snapshots) = super::open_store_with_snapshots(global)?;
    // Oldest first by the session's own time.
    snapshots.sort_by_key(|s| (session_time(s), s.id));
    if let Some(since) = args.since {
        let before = snapshots.len();
        snapshots.retain(|s| session_time(s) >= since);
        if snapshots.is_empty() {
            return Err(UserError::with_hint(
                format!(
                    "no session since {}: the {} in the store are all older",
                    fmt::local_time_or_unknown(Some(since)),
                    fmt::count(before, "snapshot", "snapshots")
                ),
                "give an earlier --since, or leave it out",
            ));
        }
    }

    if let Some(path) = &args.plot {
        let svg = plot(&snapshots)?;
        ffsession::fs_util::write_atomic(path, |w| w.write_all(svg.as_bytes()))
            .map_err(ffsession::Error::from)?;
        crate::ui::note(format_args!(
            "wrote the tab-count chart of {} to {}",
            fmt::count(snapshots.len(), "snapshot", "snapshots"),
            path.display()
        ));
    }

    if args.json {
        let rows: Vec<Row<'_>> = snapshots.iter().map(Row::of).collect();
        return super::print_json(&serde_json::json!({ "snapshots": rows }));
    }
    let mut out = io::stdout().lock();
    writeln!(
        out,
        "{:<6} {:<23}  {:<23}  {:<40} {:>7} {:>6}  status",
        "id", "session time", "backed up", "file", "windows", "tabs"
    )?;
    for s in &snapshots {
        let (windows, tabs) = match s.counts {
            // One of Zen's files: its spaces, not windows.
            Some(c) if s.kind.is_zen() => (format!("{} sp", c.windows), c.tabs.to_string()),
            Some(c) => (c.windows.to_string(), c.tabs.to_string()),
            None => ("-".to_owned(), "-".to_owned()),
        };
        let status = match &s.status {
            SnapshotStatus::Ok => "ok".to_owned(),
            SnapshotStatus::Corrupt { reason } => format!("CORRUPT: {reason}"),
        };
        writeln!(
            out,
            "#{:<5} {:<23}  {:<23}  {:<40} {windows:>7} {tabs:>6}  {status}",
            s.id,
            fmt::local_time_or_unknown(s.last_update_ms),
            fmt::local_time_or_unknown(Some(s.taken_at_ms)),
            s.file_name,
        )?;
    }
    out.flush()?;
    Ok(())
}

/// `--since`: a duration back from now (`7d`, as `tidy
/// --archive-older-than` reads it), else a date or instant (as `search
/// --since` reads it), in ms since the epoch (clap's value parser: a bad
/// value is a usage error naming the option).
fn since_arg(text: &str) -> Result<u64, String> {
    if let Ok(ago) = ffsession::tidy::parse_duration(text) {
        return Ok(super::now_ms().saturating_sub(ago));
    }
    super::search::parse_time(text, false)
        .map_err(|e| format!("{e}, or a duration back from now as 7d, 12h, 2w or 90m"))
}

/// The session's own time: its `lastUpdate`, else when it was backed up.
fn session_time(s: &SnapshotInfo) -> u64 {
    s.last_update_ms.unwrap_or(s.taken_at_ms)
}

/// Series colours: dark enough to read on white, far apart (Tableau 10).
const COLORS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(23, 190, 207),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
];

/// Chart size: the plot, and a legend row per series below it.
const WIDTH: u32 = 1000;
const PLOT_HEIGHT: u32 = 500;
const LEGEND_ROW: u32 = 22;

/// How series `i` is drawn: its line (dash length and gap, 0 for solid) and
/// its marker. Markers differ in shape and size, the later ones smaller, so
/// series with equal counts show as nested marks, not one.
fn series_style(i: usize) -> (u32, u32) {
    match i % 4 {
        0 => (0, 0),
        1 => (10, 6),
        2 => (3, 5),
        _ => (14, 4),
    }
}

/// Series `i`'s marker at `$at` (a chart point or a pixel), drawn by
/// `$draw` (a chart's `draw_series` over points, or an area's `draw`): one
/// element type per arm, so no boxing.
macro_rules! with_marker {
    ($i:expr, $color:expr, |$e:ident| $draw:expr) => {{
        let color: RGBAColor = $color;
        match $i % 4 {
            0 => {
                let $e = |at| EmptyElement::at(at) + Circle::new((0, 0), 8, color.stroke_width(2));
                $draw
            }
            1 => {
                let $e = |at| EmptyElement::at(at) + TriangleMarker::new((0, 0), 6, color.filled());
                $draw
            }
            2 => {
                let $e = |at| {
                    EmptyElement::at(at) + Rectangle::new([(-4, -4), (4, 4)], color.stroke_width(2))
                };
                $draw
            }
            _ => {
                let $e = |at| EmptyElement::at(at) + Circle::new((0, 0), 2, color.filled());
                $draw
            }
        }
    }};
}

/// The tab-count timeline as SVG: tab counts (whole numbers) over the
/// session's own time, one line per source file with its own marker and
/// dash, corrupt snapshots as red crosses at zero, and the legend in a band
/// below the plot, where it covers nothing. `snapshots` is oldest first.
fn plot(snapshots: &[SnapshotInfo]) -> Result<String> {
    let drawing = |e: &dyn std::fmt::Display| anyhow!("drawing the chart: {e}");
    let times = snapshots.iter().map(|s| session_time(s) as f64);
    let (mut x0, mut x1) = times.fold((f64::MAX, f64::MIN), |(lo, hi), t| (lo.min(t), hi.max(t)));
    // Pad by 5% (at least a minute) so single points are not on the frame.
    let pad = ((x1 - x0) * 0.05).max(60_000.0);
    (x0, x1) = (x0 - pad, x1 + pad);
    let ticks = Ticks::between(x0, x1);
    let max_tabs = snapshots
        .iter()
        .filter_map(|s| s.counts.map(|c| c.tabs))
        .max()
        .unwrap_or(0);
    // Whole numbers on the axis, with room above the highest count.
    let y1 = (max_tabs + max_tabs / 10).max(max_tabs + 1);

    let mut by_file: BTreeMap<&str, Vec<(f64, u64)>> = BTreeMap::new();
    let mut corrupt = Vec::new();
    for s in snapshots {
        let x = session_time(s) as f64;
        match s.counts {
            Some(c) if s.is_ok() => by_file.entry(&s.file_name).or_default().push((x, c.tabs)),
            _ => corrupt.push(x),
        }
    }
    for points in by_file.values_mut() {
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    let rows = by_file.len() as u32 + u32::from(!corrupt.is_empty());

    let mut svg = String::new();
    {
        let height = PLOT_HEIGHT + 10 + rows * LEGEND_ROW;
        let root = SVGBackend::with_string(&mut svg, (WIDTH, height)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| drawing(&e))?;
        let (plot_area, legend) = root.split_vertically(PLOT_HEIGHT);
        let mut chart = ChartBuilder::on(&plot_area)
            .caption("open tabs per snapshot", ("sans-serif", 20))
            .margin(15)
            .x_label_area_size(50)
            .y_label_area_size(50)
            .build_cartesian_2d(
                TimeAxis {
                    inner: (x0..x1).into(),
                    marks: ticks.at.clone(),
                },
                0u64..y1,
            )
            .map_err(|e| drawing(&e))?;
        let label = |x: &f64| ticks.label(*x);
        let x_desc = format!(
            "session time, {} (Firefox's last update of the session; backup time when unknown)",
            ticks.zone
        );
        chart
            .configure_mesh()
            .x_labels(ticks.at.len().max(1))
            .x_label_formatter(&label)
            .x_desc(x_desc)
            .y_desc("open tabs")
            .draw()
            .map_err(|e| drawing(&e))?;
        let mut legend_y = 10 + LEGEND_ROW as i32 / 2;
        for (i, (file, points)) in by_file.iter().enumerate() {
            let color = COLORS[i % COLORS.len()].to_rgba();
            let (dash, gap) = series_style(i);
            let style = color.stroke_width(2);
            if dash == 0 {
                chart.draw_series(LineSeries::new(points.iter().copied(), style))
            } else {
                chart.draw_series(DashedLineSeries::new(
                    points.iter().copied(),
                    dash,
                    gap,
                    style,
                ))
            }
            .map_err(|e| drawing(&e))?;
            with_marker!(i, color, |m| chart
                .draw_series(points.iter().map(|&p| m(p)))
                .map(|_| ()))
            .map_err(|e| drawing(&e))?;
            // Its legend row: the line as drawn, the marker, the file.
            let line = [(20, legend_y), (70, legend_y)];
            if dash == 0 {
                legend.draw(&PathElement::new(line, style))
            } else {
                legend.draw(&DashedPathElement::new(line, dash, gap, style))
            }
            .map_err(|e| drawing(&e))?;
            with_marker!(i, color, |m| legend.draw(&m((45, legend_y)))).map_err(|e| drawing(&e))?;
            legend
                .draw(&Text::new(
                    file.to_string(),
                    (85, legend_y - 7),
                    ("sans-serif", 14),
                ))
                .map_err(|e| drawing(&e))?;
            legend_y += LEGEND_ROW as i32;
        }
        if !corrupt.is_empty() {
            chart
                .draw_series(
                    corrupt
                        .iter()
                        .map(|&x| Cross::new((x, 0), 6, RED.stroke_width(2))),
                )
                .map_err(|e| drawing(&e))?;
            legend
                .draw(&Cross::new((45, legend_y), 6, RED.stroke_width(2)))
                .map_err(|e| drawing(&e))?;
            legend
                .draw(&Text::new(
                    "corrupt snapshot",
                    (85, legend_y - 7),
                    ("sans-serif", 14),
                ))
                .map_err(|e| drawing(&e))?;
        }
        root.present().map_err(|e| drawing(&e))?;
    }
    Ok(svg)
}

/// The time axis: ms since the epoch, marked where [`Ticks`] says (plotters'
/// own marks of an f64 axis fall at odd times).
struct TimeAxis {
    inner: plotters::coord::types::RangedCoordf64,
    marks: Vec<f64>,
}

impl Ranged for TimeAxis {
    type ValueType = f64;
    type FormatOption = DefaultFormatting;

    fn range(&self) -> std::ops::Range<f64> {
        self.inner.range()
    }

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.inner.map(value, limit)
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.marks.clone()
        }
    }
}

/// The marks of the time axis: round local times (every few minutes, hours,
/// days or months, as the span asks), at most [`Ticks::MOST`] of them, each
/// labelled no finer than its step needs.
struct Ticks {
    /// Where, in ms since the epoch.
    at: Vec<f64>,
    /// The label's strftime format.
    format: &'static str,
    /// The time zone's name, for the axis's title.
    zone: String,
}

/// A step between marks.
#[derive(Clone, Copy)]
enum Step {
    Minutes(i64),
    Hours(i64),
    Days(i64),
    Months(i64),
}

impl Ticks {
    const MOST: f64 = 7.0;

    fn between(x0: f64, x1: f64) -> Ticks {
        use jiff::{Span, Timestamp, Zoned};
        const MIN: f64 = 60_000.0;
        const HOUR: f64 = 60.0 * MIN;
        const DAY: f64 = 24.0 * HOUR;
        let steps = [
            (Step::Minutes(1), MIN),
            (Step::Minutes(5), 5.0 * MIN),
            (Step::Minutes(15), 15.0 * MIN),
            (Step::Minutes(30), 30.0 * MIN),
            (Step::Hours(1), HOUR),
            (Step::Hours(3), 3.0 * HOUR),
            (Step::Hours(6), 6.0 * HOUR),
            (Step::Hours(12), 12.0 * HOUR),
            (Step::Days(1), DAY),
            (Step::Days(2), 2.0 * DAY),
            (Step::Days(7), 7.0 * DAY),
            (Step::Days(14), 14.0 * DAY),
            (Step::Months(1), 30.44 * DAY),
            (Step::Months(3), 91.3 * DAY),
            (Step::Months(6), 182.6 * DAY),
            (Step::Months(12), 365.2 * DAY),
        ];
        let span = (x1 - x0).max(0.0);
        let (step, _) = steps
            .iter()
            .copied()
            .find(|&(_, ms)| span / ms <= Self::MOST)
            .unwrap_or(steps[steps.len() - 1]);
        let zone = fmt::local_zone();
        let zoned = |ms: f64| -> Option<Zoned> {
            Some(
                Timestamp::from_millisecond(ms as i64)
                    .ok()?
                    .to_zoned(zone.clone()),
            )
        };
        let Some(first) = zoned(x0.max(0.0)) else {
            return Ticks {
                at: Vec::new(),
                format: "%Y-%m-%d",
                zone: String::new(),
            };
        };
        let zone_name = first.strftime("%Z").to_string();
        // The round time at or before x0 to count from, and the step as a span.
        let (start, by, format) = match step {
            Step::Minutes(n) => (
                first.start_of_day().ok(),
                Span::new().minutes(n),
                "%Y-%m-%d %H:%M",
            ),
            Step::Hours(n) => (
                first.start_of_day().ok(),
                Span::new().hours(n),
                "%Y-%m-%d %H:%M",
            ),
            Step::Days(n) => (first.start_of_day().ok(), Span::new().days(n), "%Y-%m-%d"),
            Step::Months(n) => (
                if n == 12 {
                    first.date().first_of_year()
                } else {
                    first.date().first_of_month()
                }
                .to_zoned(zone.clone())
                .ok(),
                Span::new().months(n),
                if n == 12 { "%Y" } else { "%Y-%m" },
            ),
        };
        let mut at = Vec::new();
        let mut t = start;
        // Minute and hour steps count from midnight, so the marks are round.
        while let Some(z) = t {
            let ms = z.timestamp().as_millisecond() as f64;
            if ms > x1 {
                break;
            }
            if ms >= x0 {
                at.push(ms);
            }
            t = z.checked_add(by).ok();
        }
        // Decades of yearly marks: every few years.
        let every = (at.len() as f64 / Self::MOST).ceil().max(1.0) as usize;
        let at = at.into_iter().step_by(every).collect();
        Ticks {
            at,
            format,
            zone: zone_name,
        }
    }

    fn label(&self, x: f64) -> String {
        match jiff::Timestamp::from_millisecond(x as i64) {
            Ok(ts) => ts
                .to_zoned(fmt::local_zone())
                .strftime(self.format)
                .to_string(),
            Err(_) => String::new(),
        }
    }
}
