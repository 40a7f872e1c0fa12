//! `canopy bench report DIR`: the GPU measurement run's figures (the JSON files
//! `tools/gpu-bench.sh run` leaves) as BENCHMARKS.md rows against canopy's targets
//! ([`canopy::bench::report`]). Needs no GPU.

use super::CliError;
use canopy::bench::report::target_rows;
use std::path::PathBuf;

/// Options of `canopy bench report`.
#[derive(clap::Args, Clone, Debug)]
pub struct ReportArgs {
    /// The folder holding the run's JSON files (lbvh.json, render.json, ..., meta.json).
    pub folder: PathBuf,
}

/// Prints the rows as a Markdown table.
pub fn run(args: &ReportArgs) -> Result<(), CliError> {
    let (rows, meta) = target_rows(&args.folder)
        .map_err(|e| CliError::Failed(format!("{}: {e}", args.folder.display())))?;
    if let Some(meta) = meta {
        let field = |key: &str| {
            meta.get(key)
                .and_then(|v| v.as_str())
                .unwrap_or("?")
                .to_string()
        };
        println!(
            "{}, {}, commit `{}`.\n",
            field("device"),
            field("date"),
            field("commit")
        );
    }
    println!("| workload | triangles | figure | driver | target | ratio to target | met |");
    println!("|---|---:|---:|---:|---:|---:|---|");
    for row in &rows {
        let number = |x: Option<f64>| x.map_or("-".into(), |x| format!("{x:.3} {}", row.unit));
        let ratio = row
            .figure
            .map_or("-".into(), |f| format!("{:.2}", f / row.target));
        let met = match row.met {
            Some(true) => "yes",
            Some(false) => "no",
            None => "not measured",
        };
        println!(
            "| {} | {} | {} | {} | {} {} | {ratio} | {met} |",
            row.label,
            row.triangles.map_or("-".into(), |n| n.to_string()),
            number(row.figure),
            number(row.driver),
            row.target,
            row.unit
        );
    }
    Ok(())
}
