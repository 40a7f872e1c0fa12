//! The GPU measurement run's figures against canopy's targets: reads the JSON that
//! `tools/gpu-bench.sh run` leaves (one file per benchmark, written by `--json`, and
//! `meta.json` with the device, date and commit) and makes one row per target, with the
//! figure, the driver's beside it where measured, and the ratio to the target
//! (`canopy bench report DIR`, whose rows go into BENCHMARKS.md). A target whose benchmark
//! is missing from the folder gets a row saying so.

use serde_json::Value;
use std::path::Path;

/// What a target bounds.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Figure {
    /// A structure's build time in ms, at most the target.
    BuildMs,
    /// Rays of a kind per second (G rays/s) through a structure, at least the target.
    Rays(&'static str),
    /// A whole rendered frame in ms, at most the target.
    FrameMs,
    /// The screen grid's own build stages plus its camera rays in ms, at most the target.
    GridBuildAndCast,
    /// `canopy bench animation`'s skinning of this many vertices in ms, at most the target.
    SkinMs(u64),
    /// Its Loop subdivision of a control mesh of this many triangles in ms, at most the
    /// target.
    SubdivisionMs(u64),
    /// Its streamed sequence's frame rate as a share of the still mesh's, at least the target.
    StreamShare,
    /// `canopy bench instances`'s rebuild of the top tree in ms, at most the target.
    TopTreeMs,
    /// Its rays of a kind through two levels, their time over the flattened tree's, at most
    /// the target.
    TwoLevelRatio(&'static str),
}

impl Figure {
    /// Whether the figure comes from a benchmark of one report (an object), not one per
    /// structure and size.
    fn of_one_report(self) -> bool {
        matches!(
            self,
            Figure::SkinMs(_)
                | Figure::SubdivisionMs(_)
                | Figure::StreamShare
                | Figure::TopTreeMs
                | Figure::TwoLevelRatio(_)
        )
    }
}

/// One target of the measurement issue.
struct Target {
    label: &'static str,
    /// The JSON file (without `.json`).
    file: &'static str,
    structure: &'static str,
    /// The default scene's nominal size the target names (the scene adds its ground).
    triangles: u64,
    figure: Figure,
    target: f64,
}

const TARGETS: &[Target] = &[
    Target {
        label: "LBVH build, 1M triangles",
        file: "lbvh",
        structure: "lbvh",
        triangles: 1_000_000,
        figure: Figure::BuildMs,
        target: 0.25,
    },
    Target {
        label: "LBVH camera rays, 1M triangles",
        file: "lbvh",
        structure: "lbvh",
        triangles: 1_000_000,
        figure: Figure::Rays("camera"),
        target: 10.0,
    },
    Target {
        label: "LBVH shadow rays, 1M triangles",
        file: "lbvh",
        structure: "lbvh",
        triangles: 1_000_000,
        figure: Figure::Rays("shadow"),
        target: 3.0,
    },
    Target {
        label: "LBVH reflected rays, 1M triangles",
        file: "lbvh",
        structure: "lbvh",
        triangles: 1_000_000,
        figure: Figure::Rays("reflected"),
        target: 3.0,
    },
    Target {
        label: "high-quality BVH build, 1M triangles",
        file: "lbvh-hq",
        structure: "lbvh",
        triangles: 1_000_000,
        figure: Figure::BuildMs,
        target: 0.5,
    },
    Target {
        label: "high-quality BVH camera rays, 1M triangles",
        file: "lbvh-hq",
        structure: "lbvh",
        triangles: 1_000_000,
        figure: Figure::Rays("camera"),
        target: 10.0,
    },
    Target {
        label: "high-quality BVH shadow rays, 1M triangles",
        file: "lbvh-hq",
        structure: "lbvh",
        triangles: 1_000_000,
        figure: Figure::Rays("shadow"),
        target: 3.0,
    },
    Target {
        label: "high-quality BVH reflected rays, 1M triangles",
        file: "lbvh-hq",
        structure: "lbvh",
        triangles: 1_000_000,
        figure: Figure::Rays("reflected"),
        target: 3.0,
    },
    Target {
        label: "frame, 1M triangles, 1920x1080, 2 bounces",
        file: "render",
        structure: "lbvh",
        triangles: 1_000_000,
        figure: Figure::FrameMs,
        target: 1.5,
    },
    Target {
        label: "frame with the high-quality BVH, 1M triangles, 1920x1080, 2 bounces",
        file: "render-hq",
        structure: "lbvh",
        triangles: 1_000_000,
        figure: Figure::FrameMs,
        target: 1.5,
    },
    Target {
        label: "SAH kd-tree build, 174K triangles",
        file: "kdtree",
        structure: "kdtree",
        triangles: 174_000,
        figure: Figure::BuildMs,
        target: 1.0,
    },
    Target {
        label: "SAH kd-tree build, 1M triangles",
        file: "kdtree",
        structure: "kdtree",
        triangles: 1_000_000,
        figure: Figure::BuildMs,
        target: 4.0,
    },
    Target {
        label: "SAH kd-tree build, 5M triangles",
        file: "kdtree",
        structure: "kdtree",
        triangles: 5_000_000,
        figure: Figure::BuildMs,
        target: 20.0,
    },
    Target {
        label: "BIH build, 79K triangles",
        file: "bih",
        structure: "bih",
        triangles: 79_000,
        figure: Figure::BuildMs,
        target: 1.0,
    },
    Target {
        label: "BIH build, 175K triangles",
        file: "bih",
        structure: "bih",
        triangles: 175_000,
        figure: Figure::BuildMs,
        target: 1.5,
    },
    Target {
        label: "BIH build, 1M triangles",
        file: "bih",
        structure: "bih",
        triangles: 1_000_000,
        figure: Figure::BuildMs,
        target: 5.0,
    },
    Target {
        label: "screen grid build + cast, 870K triangles, 1024x1024",
        file: "grid",
        structure: "grid",
        triangles: 870_000,
        figure: Figure::GridBuildAndCast,
        target: 0.9,
    },
    Target {
        label: "skinning, 1M vertices",
        file: "animation",
        structure: "",
        triangles: 0,
        figure: Figure::SkinMs(1_000_000),
        target: 0.1,
    },
    Target {
        label: "two Loop levels of a 50K-triangle control mesh",
        file: "animation",
        structure: "",
        triangles: 0,
        figure: Figure::SubdivisionMs(50_000),
        target: 1.0,
    },
    Target {
        label: "two Loop levels of a 200K-triangle control mesh (3.2M triangles)",
        file: "animation",
        structure: "",
        triangles: 0,
        figure: Figure::SubdivisionMs(200_000),
        target: 1.0,
    },
    Target {
        label: "sequence streamed from disk, share of the still mesh's frame rate",
        file: "animation",
        structure: "",
        triangles: 0,
        figure: Figure::StreamShare,
        target: 0.9,
    },
    Target {
        label: "two levels: top tree over 10,000 instances of 100 meshes",
        file: "instances",
        structure: "",
        triangles: 0,
        figure: Figure::TopTreeMs,
        target: 0.05,
    },
    Target {
        label: "two levels: camera rays, time over the flattened tree's",
        file: "instances",
        structure: "",
        triangles: 0,
        figure: Figure::TwoLevelRatio("camera"),
        target: 1.2,
    },
    Target {
        label: "two levels: shadow rays, time over the flattened tree's",
        file: "instances",
        structure: "",
        triangles: 0,
        figure: Figure::TwoLevelRatio("shadow"),
        target: 1.2,
    },
    Target {
        label: "two levels: reflected rays, time over the flattened tree's",
        file: "instances",
        structure: "",
        triangles: 0,
        figure: Figure::TwoLevelRatio("reflected"),
        target: 1.2,
    },
];

/// The grid's own build stages (its LBVH's are the others).
const GRID_STAGES: &[&str] = &[
    "grid: project",
    "grid: scan",
    "grid: references",
    "multisplit: bin sizes",
    "multisplit: reorder",
];

/// One row: a target, what was measured, the driver's figure beside it, and whether it met.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct TargetRow {
    /// The workload.
    pub label: String,
    /// Its triangles as built (with the scene's ground), when measured.
    pub triangles: Option<u64>,
    /// The figure (ms, or G rays/s), when measured.
    pub figure: Option<f64>,
    /// Its unit.
    pub unit: &'static str,
    /// The driver's own figure for the same work, where measured.
    pub driver: Option<f64>,
    /// The target.
    pub target: f64,
    /// Whether the figure meets it.
    pub met: Option<bool>,
}

fn ms(timing: &Value) -> Option<f64> {
    timing.get("median_ms")?.as_f64()
}

/// The report of `structure` in `reports` whose triangle count is nearest `triangles`
/// (within 10%).
fn nearest<'a>(reports: &'a [Value], structure: &str, triangles: u64) -> Option<&'a Value> {
    reports
        .iter()
        .filter(|r| r.get("structure").and_then(Value::as_str) == Some(structure))
        .filter_map(|r| Some((r, r.get("triangles")?.as_u64()?)))
        .filter(|&(_, n)| n.abs_diff(triangles) * 10 <= triangles)
        .min_by_key(|&(_, n)| n.abs_diff(triangles))
        .map(|(r, _)| r)
}

/// G rays/s of a timed trace.
fn rate(count: f64, timing: &Value) -> Option<f64> {
    Some(count / ms(timing)? * 1e-6)
}

/// The figure of `target` in `report`, and the driver's beside it.
fn measure(target: &Target, report: &Value) -> (Option<f64>, Option<f64>) {
    match target.figure {
        Figure::BuildMs => (
            report.get("build").and_then(ms),
            report.pointer("/native/build").and_then(ms),
        ),
        Figure::FrameMs => (report.get("frame").and_then(ms), None),
        Figure::Rays(kind) => {
            let ours = report
                .get("traversal")
                .and_then(Value::as_array)
                .and_then(|t| t.iter().find(|t| t["rays"] == kind))
                .and_then(|t| rate(t.pointer("/work/rays")?.as_f64()?, t.get("time")?));
            let driver = report
                .pointer("/native/traversal")
                .and_then(Value::as_array)
                .and_then(|t| t.iter().find(|t| t["rays"] == kind))
                .and_then(|t| rate(t.get("count")?.as_f64()?, t.get("time")?));
            (ours, driver)
        }
        Figure::SkinMs(_)
        | Figure::SubdivisionMs(_)
        | Figure::StreamShare
        | Figure::TopTreeMs
        | Figure::TwoLevelRatio(_) => (None, None),
        Figure::GridBuildAndCast => {
            let build: Option<f64> = report
                .pointer("/build/stages")
                .and_then(Value::as_array)
                .map(|stages| {
                    stages
                        .iter()
                        .filter(|s| GRID_STAGES.iter().any(|name| s["name"] == *name))
                        .filter_map(|s| s.get("ms")?.as_f64())
                        .sum()
                });
            let cast = report
                .get("traversal")
                .and_then(Value::as_array)
                .and_then(|t| t.iter().find(|t| t["rays"] == "camera"))
                .and_then(|t| t.get("time").and_then(ms));
            (build.zip(cast).map(|(b, c)| b + c), None)
        }
    }
}

/// The figure of a target of a benchmark of one report: `canopy bench animation`'s or
/// `canopy bench instances`'.
fn measure_one_report(figure: Figure, report: &Value) -> Option<f64> {
    // The entry of `list` whose `key` is nearest `count` (within 10%).
    let nearest = |list: &str, key: &str, count: u64| {
        report
            .get(list)?
            .as_array()?
            .iter()
            .filter_map(|entry| Some((entry, entry.get(key)?.as_u64()?)))
            .filter(|&(_, n)| n.abs_diff(count) * 10 <= count)
            .min_by_key(|&(_, n)| n.abs_diff(count))
            .and_then(|(entry, _)| entry.get("timing").and_then(ms))
    };
    match figure {
        Figure::SkinMs(vertices) => nearest("skins", "vertices", vertices),
        Figure::SubdivisionMs(triangles) => nearest("subdivisions", "control_triangles", triangles),
        Figure::StreamShare => {
            let stream = report.get("stream")?;
            Some(stream.get("streamed_fps")?.as_f64()? / stream.get("still_fps")?.as_f64()?)
        }
        Figure::TopTreeMs => report.get("top_build").and_then(ms),
        Figure::TwoLevelRatio(kind) => report
            .get("traversal")?
            .as_array()?
            .iter()
            .find(|t| t.pointer("/flattened/rays") == Some(&Value::from(kind)))?
            .get("time_ratio")?
            .as_f64(),
        _ => None,
    }
}

/// The rows of every target from the JSON files in `folder`; with the contents of its
/// `meta.json` (device, date, commit) when present.
pub fn target_rows(folder: &Path) -> std::io::Result<(Vec<TargetRow>, Option<Value>)> {
    let read = |name: &str| -> std::io::Result<Option<Value>> {
        let path = folder.join(format!("{name}.json"));
        match std::fs::read_to_string(&path) {
            Ok(text) => serde_json::from_str(&text)
                .map(Some)
                .map_err(|e| std::io::Error::other(format!("{}: {e}", path.display()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    };
    let meta = read("meta")?;
    let mut rows = Vec::new();
    for target in TARGETS {
        let file = read(target.file)?;
        let reports: Vec<Value> = file
            .as_ref()
            .and_then(|f| f.get("reports")?.as_array().cloned())
            .unwrap_or_default();
        let (report, (figure, driver)) = if target.figure.of_one_report() {
            let report = file.as_ref().and_then(|f| f.get("reports"));
            let figure = report.and_then(|r| measure_one_report(target.figure, r));
            (None, (figure, None))
        } else {
            let report = nearest(&reports, target.structure, target.triangles);
            (report, report.map_or((None, None), |r| measure(target, r)))
        };
        let unit = match target.figure {
            Figure::Rays(_) => "G rays/s",
            Figure::StreamShare => "of still",
            Figure::TwoLevelRatio(_) => "x flattened",
            _ => "ms",
        };
        let met = figure.map(|f| match target.figure {
            Figure::Rays(_) | Figure::StreamShare => f >= target.target,
            _ => f <= target.target,
        });
        rows.push(TargetRow {
            label: target.label.into(),
            triangles: report.and_then(|r| r.get("triangles")?.as_u64()),
            figure,
            unit,
            driver,
            target: target.target,
            met,
        });
    }
    Ok((rows, meta))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rows_read_the_figures_and_judge_them() {
        let folder = std::env::temp_dir().join(format!("canopy-report-{}", std::process::id()));
        std::fs::create_dir_all(&folder).unwrap();
        let timing = |ms: f64| json!({"runs": 3, "median_ms": ms, "stages": []});
        let lbvh = json!({"reports": [{
            "structure": "lbvh", "triangles": 1_003_202, "build": timing(0.2),
            "traversal": [{"rays": "camera", "work": {"rays": 1_000_000}, "time": timing(0.05)}],
            "native": {"build": timing(1.0), "traversal": [
                {"rays": "camera", "count": 1_000_000, "time": timing(0.2)}]},
        }, {
            "structure": "lbvh", "triangles": 10_003_202, "build": timing(3.0), "traversal": [],
        }]});
        let grid = json!({"reports": [{
            "structure": "grid", "triangles": 875_384,
            "build": {"runs": 3, "median_ms": 0.8, "stages": [
                {"name": "lbvh: sort", "ms": 0.2}, {"name": "grid: project", "ms": 0.1},
                {"name": "multisplit: reorder", "ms": 0.15}]},
            "traversal": [{"rays": "camera", "work": {"rays": 1}, "time": timing(0.5)}],
        }]});
        std::fs::write(folder.join("lbvh.json"), lbvh.to_string()).unwrap();
        std::fs::write(folder.join("grid.json"), grid.to_string()).unwrap();
        let animation = json!({"reports": {
            "skins": [{"vertices": 100_000, "timing": timing(0.01)},
                      {"vertices": 1_000_000, "timing": timing(0.03)}],
            "subdivisions": [{"control_triangles": 49_686, "timing": timing(1.5)}],
            "stream": {"streamed_fps": 450.0, "still_fps": 600.0},
        }});
        std::fs::write(folder.join("animation.json"), animation.to_string()).unwrap();
        let instances = json!({"reports": {
            "top_build": timing(0.14),
            "traversal": [
                {"flattened": {"rays": "camera"}, "two_level": {"rays": "camera"}, "time_ratio": 1.45},
                {"flattened": {"rays": "shadow"}, "two_level": {"rays": "shadow"}, "time_ratio": 1.1},
            ],
        }});
        std::fs::write(folder.join("instances.json"), instances.to_string()).unwrap();
        std::fs::write(folder.join("meta.json"), r#"{"commit": "abc"}"#).unwrap();
        let (rows, meta) = target_rows(&folder).unwrap();
        std::fs::remove_dir_all(&folder).unwrap();
        assert_eq!(meta.unwrap()["commit"], "abc");
        let row = |label: &str| rows.iter().find(|r| r.label.starts_with(label)).unwrap();
        let build = row("LBVH build");
        assert_eq!(
            (build.figure, build.driver, build.met),
            (Some(0.2), Some(1.0), Some(true))
        );
        assert_eq!(build.triangles, Some(1_003_202));
        let camera = row("LBVH camera");
        assert_eq!(
            (camera.figure, camera.driver, camera.met),
            (Some(20.0), Some(5.0), Some(true))
        );
        assert_eq!(row("LBVH shadow").met, None);
        let grid = row("screen grid");
        assert!((grid.figure.unwrap() - 0.75).abs() < 1e-9 && grid.met == Some(true));
        assert_eq!(row("BIH build, 79K").figure, None);
        let skin = row("skinning");
        assert_eq!((skin.figure, skin.met), (Some(0.03), Some(true)));
        let loop_50k = row("two Loop levels of a 50K");
        assert_eq!((loop_50k.figure, loop_50k.met), (Some(1.5), Some(false)));
        assert_eq!(row("two Loop levels of a 200K").figure, None);
        let stream = row("sequence streamed");
        assert_eq!((stream.figure, stream.met), (Some(0.75), Some(false)));
        let top = row("two levels: top tree");
        assert_eq!((top.figure, top.met), (Some(0.14), Some(false)));
        let two_level = |kind: &str| {
            let row = row(&format!("two levels: {kind} rays"));
            (row.figure, row.met, row.unit)
        };
        assert_eq!(
            two_level("camera"),
            (Some(1.45), Some(false), "x flattened")
        );
        assert_eq!(two_level("shadow"), (Some(1.1), Some(true), "x flattened"));
        assert_eq!(two_level("reflected"), (None, None, "x flattened"));
    }
}
