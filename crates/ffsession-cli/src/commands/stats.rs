//! `ffsession stats`: windows and tabs over time, from the store's snapshots.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::PathBuf;

use anyhow::{anyhow, Result};
use clap::Args;
use ffsession::store::{SnapshotInfo, SnapshotStatus};
use plotters::prelude::*;

use crate::cli::GlobalArgs;
use crate::fmt;

/// Show how many windows and tabs each snapshot in the profile's backup store
/// held, oldest first: when it was taken, the source file, windows, tabs and
/// status. `--plot` draws the tab counts over time as an SVG chart, one line
/// per source file, with corrupt snapshots marked in red at zero.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  ffsession stats                    the table, oldest first
  ffsession stats --json             the same as JSON
  ffsession stats --plot tabs.svg    also draw the tab counts over time")]
pub struct StatsArgs {
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
    file_name: &'s str,
    windows: Option<u64>,
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
            file_name: &s.file_name,
            windows: s.counts.map(|c| c.windows),
            tabs: s.counts.map(|c| c.tabs),
            status: if reason.is_some() { "corrupt" } else { "ok" },
            reason,
        }
    }
}

pub fn run(global: &GlobalArgs, args: StatsArgs) -> Result<()> {
    let (_, mut snapshots) = super::open_store_with_snapshots(global)?;
    snapshots.reverse(); // oldest first

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
        "{:<6} {:<23}  {:<40} {:>7} {:>6}  status",
        "id", "time", "file", "windows", "tabs"
    )?;
    for s in &snapshots {
        let (windows, tabs) = match s.counts {
            Some(c) => (c.windows.to_string(), c.tabs.to_string()),
            None => ("-".to_owned(), "-".to_owned()),
        };
        let status = match &s.status {
            SnapshotStatus::Ok => "ok".to_owned(),
            SnapshotStatus::Corrupt { reason } => format!("CORRUPT: {reason}"),
        };
        writeln!(
            out,
            "#{:<5} {:<23}  {:<40} {windows:>7} {tabs:>6}  {status}",
            s.id,
            fmt::local_time_or_unknown(Some(s.taken_at_ms)),
            s.file_name,
        )?;
    }
    out.flush()?;
    Ok(())
}

/// The tab-count timeline as SVG: one line per source file, corrupt
/// snapshots as red crosses at zero. `snapshots` is oldest first.
fn plot(snapshots: &[SnapshotInfo]) -> Result<String> {
    let drawing = |e: &dyn std::fmt::Display| anyhow!("drawing the chart: {e}");
    let times = snapshots.iter().map(|s| s.taken_at_ms as f64);
    let (mut x0, mut x1) = times.fold((f64::MAX, f64::MIN), |(lo, hi), t| (lo.min(t), hi.max(t)));
    // Pad by 5% (at least a minute) so single points are not on the frame.
    let pad = ((x1 - x0) * 0.05).max(60_000.0);
    (x0, x1) = (x0 - pad, x1 + pad);
    let max_tabs = snapshots
        .iter()
        .filter_map(|s| s.counts.map(|c| c.tabs))
        .max()
        .unwrap_or(0);
    let y1 = (max_tabs as f64 * 1.1).max(1.0);

    let mut by_file: BTreeMap<&str, Vec<(f64, f64)>> = BTreeMap::new();
    let mut corrupt = Vec::new();
    for s in snapshots {
        let x = s.taken_at_ms as f64;
        match s.counts {
            Some(c) if s.is_ok() => by_file
                .entry(&s.file_name)
                .or_default()
                .push((x, c.tabs as f64)),
            _ => corrupt.push(x),
        }
    }

    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (1000, 500)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| drawing(&e))?;
        let mut chart = ChartBuilder::on(&root)
            .caption("open tabs per snapshot", ("sans-serif", 20))
            .margin(15)
            .x_label_area_size(40)
            .y_label_area_size(50)
            .build_cartesian_2d(x0..x1, 0.0..y1)
            .map_err(|e| drawing(&e))?;
        let label = |x: &f64| fmt::local_time_or_unknown(Some(x.max(0.0) as u64));
        chart
            .configure_mesh()
            .x_labels(5)
            .x_label_formatter(&label)
            .y_desc("tabs")
            .draw()
            .map_err(|e| drawing(&e))?;
        for (i, (file, points)) in by_file.iter().enumerate() {
            let color = Palette99::pick(i).to_rgba();
            chart
                .draw_series(LineSeries::new(
                    points.iter().copied(),
                    color.stroke_width(2),
                ))
                .map_err(|e| drawing(&e))?
                .label(*file)
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], color));
            chart
                .draw_series(points.iter().map(|&p| Circle::new(p, 3, color.filled())))
                .map_err(|e| drawing(&e))?;
        }
        if !corrupt.is_empty() {
            chart
                .draw_series(
                    corrupt
                        .iter()
                        .map(|&x| Cross::new((x, 0.0), 6, RED.stroke_width(2))),
                )
                .map_err(|e| drawing(&e))?
                .label("corrupt snapshot")
                .legend(|(x, y)| Cross::new((x + 10, y), 5, RED.stroke_width(2)));
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(|e| drawing(&e))?;
        root.present().map_err(|e| drawing(&e))?;
    }
    Ok(svg)
}
