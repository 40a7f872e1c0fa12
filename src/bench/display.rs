//! The reports as text: what `canopy bench`, `canopy build` and the `cargo bench` targets
//! print. Each report displays as a block of lines; [`WorkTable`] is one row of counters per
//! structure and run.

use super::animation::AnimationReport;
use super::dispatch::{ChainReport, CopyReport, NodeReadReport};
use super::frames::FrameReport;
use super::instances::InstancesReport;
use super::prims::{PrimRow, PrimsReport, Yardsticks};
use super::structures::StructureReport;
use super::traversal::{NativeTrace, TraversalReport};
use crate::accel::TreeShape;
use crate::vk::WorkCounts;
use std::fmt::{Display, Formatter, Result};

/// Bytes as MiB.
fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1u64 << 20) as f64
}

/// An optional count, `?` when unknown.
fn or_unknown(n: Option<u32>) -> String {
    n.map_or("?".into(), |n| n.to_string())
}

impl Display for WorkCounts {
    /// `N dispatches (M indirect), K with work, B barriers`.
    fn fmt(&self, f: &mut Formatter) -> Result {
        write!(
            f,
            "{} dispatches ({} indirect), {} with work, {} barriers",
            self.dispatches,
            self.indirect_dispatches,
            or_unknown(self.dispatches_with_work),
            self.barriers
        )
    }
}

impl Display for TraversalReport {
    /// One line: rays, hits, nodes and tests per ray, and the time if taken.
    fn fmt(&self, f: &mut Formatter) -> Result {
        let w = &self.work;
        write!(
            f,
            "{:<9} {:<7} {:>9} rays {:>9} hits  nodes/ray {:>7.2} (max {:>4}, lockstep {:>7.2})  tests/ray {:>7.2} (max {:>5}, lockstep {:>7.2})",
            self.rays.name(),
            self.query,
            w.rays,
            self.hits,
            w.mean_nodes,
            w.max_nodes,
            w.lockstep_nodes,
            w.mean_primitives,
            w.max_primitives,
            w.lockstep_primitives,
        )?;
        if let Some(bytes) = self.bytes_per_ray {
            write!(f, "  bytes/ray {bytes:>6.0}")?;
        }
        if let Some(time) = &self.time {
            write!(
                f,
                "; {:.4} ms = {:.4} G rays/s",
                time.median_ms,
                w.rays as f64 / time.median_ms * 1e-6
            )?;
        }
        Ok(())
    }
}

impl Display for NativeTrace {
    /// One line: rays, hits and the time.
    fn fmt(&self, f: &mut Formatter) -> Result {
        write!(
            f,
            "{:<9} {:<7} {:>9} rays {:>9} hits; {:.4} ms = {:.4} G rays/s",
            self.rays.name(),
            self.query,
            self.count,
            self.hits,
            self.time.median_ms,
            self.count as f64 / self.time.median_ms * 1e-6
        )
    }
}

/// Traversal lines under a label.
fn traversals(f: &mut Formatter, label: &str, traversal: &[TraversalReport]) -> Result {
    for (i, t) in traversal.iter().enumerate() {
        writeln!(f, "  {:<10} {t}", if i == 0 { label } else { "" })?;
    }
    Ok(())
}

impl Display for TreeShape {
    /// `N nodes, L leaves, depth D, R references, SAH cost C (model)`.
    fn fmt(&self, f: &mut Formatter) -> Result {
        write!(
            f,
            "{} nodes, {} leaves, depth {}, {} references",
            self.nodes, self.leaves, self.depth, self.references
        )?;
        if let (Some(cost), Some(model)) = (self.sah_cost, &self.sah_model) {
            write!(f, ", SAH cost {cost:.2} ({model})")?;
        }
        if let Some(in_view) = self.in_view {
            let tiles = self.references as f64 / in_view.max(1) as f64;
            write!(f, ", {in_view} triangles in view in {tiles:.2} tiles each")?;
        }
        Ok(())
    }
}

impl Display for StructureReport {
    /// A block: build time per stage, work, memory, tree, rays, the driver's builder and the
    /// CPU reference.
    fn fmt(&self, f: &mut Formatter) -> Result {
        let (what, one) = if self.structure.over_triangles() {
            ("triangles", "triangle")
        } else {
            ("vertices", "vertex")
        };
        let quality = match (self.bvh_quality, self.bvh_layout) {
            (Some(q), Some(l)) => format!(", {} {} BVH", q.name(), l.name()),
            _ => String::new(),
        };
        writeln!(
            f,
            "{}{quality} over {} ({} triangles, {} vertices; built over {} {what})",
            self.structure, self.mesh, self.triangles, self.vertices, self.primitives
        )?;
        let stages: Vec<String> = self
            .build
            .stages
            .iter()
            .map(|s| {
                let short = s.name.split_once(": ").map_or(s.name.as_str(), |n| n.1);
                format!("{short} {:.3}", s.ms)
            })
            .collect();
        let ms = self.build.median_ms;
        writeln!(
            f,
            "  {:<10} {ms:.4} ms, {:.2} ns/{one}, {:.3} M {what}/s  [{}]",
            "build",
            ms * 1e6 / self.primitives as f64,
            self.primitives as f64 / ms * 1e-3,
            stages.join(", ")
        )?;
        if let Some(refit) = &self.refit {
            writeln!(
                f,
                "  {:<10} {:.4} ms (the same tree's boxes made again, in place of the build)",
                "refit", refit.median_ms
            )?;
        }
        writeln!(f, "  {:<10} {}", "work", self.work)?;
        let m = &self.memory;
        writeln!(
            f,
            "  {:<10} tree {:.2} MiB, scratch {:.2} MiB, peak {:.2} MiB",
            "memory",
            mib(m.tree_bytes),
            mib(m.scratch_bytes),
            mib(m.peak_bytes)
        )?;
        writeln!(f, "  {:<10} {}", "tree", self.tree)?;
        if !self.tree.nodes_per_level.is_empty() {
            let levels: Vec<String> = self
                .tree
                .nodes_per_level
                .iter()
                .map(u64::to_string)
                .collect();
            writeln!(f, "  {:<10} {}", "per level", levels.join(" "))?;
        }
        traversals(f, "rays", &self.traversal)?;
        if let Some(native) = &self.native {
            writeln!(
                f,
                "  {:<10} {:.4} ms (VK_KHR_acceleration_structure, PREFER_FAST_BUILD), {:.2} MiB; \
                 canopy/driver time {:.3}",
                "driver",
                native.build.median_ms,
                mib(native.bytes),
                ms / native.build.median_ms
            )?;
            for (i, trace) in native.traversal.iter().enumerate() {
                let canopy = self
                    .traversal
                    .iter()
                    .find(|t| t.rays == trace.rays)
                    .and_then(|t| t.time.as_ref());
                writeln!(
                    f,
                    "  {:<10} {trace}{}",
                    if i == 0 { "driver rt" } else { "" },
                    canopy.map_or(String::new(), |c| format!(
                        "; canopy/driver time {:.3}",
                        c.median_ms / trace.time.median_ms
                    ))
                )?;
            }
        }
        if let Some(reference) = &self.reference {
            writeln!(
                f,
                "  {:<10} {} (built in {:.2} s): {}; GPU/CPU SAH {}",
                "reference",
                reference.builder,
                reference.cpu_seconds,
                reference.tree,
                reference
                    .sah_ratio
                    .map_or("-".into(), |x| format!("{x:.3}"))
            )?;
            if let Some(traffic) = reference.climb_traffic {
                let per = |bytes: u64| bytes as f64 / self.primitives.max(1) as f64;
                writeln!(
                    f,
                    "  {:<10} the tree's climb reads {:.0} and writes {:.0} bytes per triangle \
                     (replayed on the CPU)",
                    "traffic",
                    per(traffic.bytes_read),
                    per(traffic.bytes_written)
                )?;
            }
            if let Some(traffic) = reference.treelet_traffic {
                let per = |bytes: u64| bytes as f64 / self.primitives.max(1) as f64;
                writeln!(
                    f,
                    "  {:<10} its treelet passes read {:.0} and write {:.0} bytes per triangle \
                     (replayed on the CPU)",
                    "",
                    per(traffic.bytes_read),
                    per(traffic.bytes_written)
                )?;
            }
            traversals(f, "its rays", &reference.traversal)?;
        }
        Ok(())
    }
}

/// The work counters of many runs, one row each: dispatches, memory, depth, SAH cost, and the
/// mean nodes visited / primitives tested per ray of each ray set.
pub struct WorkTable<'a>(pub &'a [StructureReport]);

impl Display for WorkTable<'_> {
    fn fmt(&self, f: &mut Formatter) -> Result {
        writeln!(
            f,
            "work counters (device-independent; rays: nodes visited / primitives tested per ray, mean)"
        )?;
        writeln!(
            f,
            "{:<22} {:<7} {:>9} {:>10} {:>6} {:>8} {:>9} {:>11} {:>8} {:>5} {:>8} {:>13} {:>13} {:>13}",
            "mesh",
            "struct",
            "prims",
            "dispatches",
            "work",
            "barriers",
            "tree MiB",
            "scratch MiB",
            "peak MiB",
            "depth",
            "SAH",
            "camera",
            "shadow",
            "reflected"
        )?;
        for r in self.0 {
            let per_ray = |name: &str| {
                r.traversal
                    .iter()
                    .find(|t| t.rays.name() == name)
                    .map_or("-".into(), |t| {
                        format!("{:.1} / {:.1}", t.work.mean_nodes, t.work.mean_primitives)
                    })
            };
            let mesh: String = r.mesh.chars().take(22).collect();
            writeln!(
                f,
                "{mesh:<22} {:<7} {:>9} {:>10} {:>6} {:>8} {:>9.2} {:>11.2} {:>8.2} {:>5} {:>8} {:>13} {:>13} {:>13}",
                r.label(),
                r.primitives,
                r.work.dispatches,
                or_unknown(r.work.dispatches_with_work),
                r.work.barriers,
                mib(r.memory.tree_bytes),
                mib(r.memory.scratch_bytes),
                mib(r.memory.peak_bytes),
                r.tree.depth,
                r.tree.sah_cost.map_or("-".into(), |c| format!("{c:.2}")),
                per_ray("camera"),
                per_ray("shadow"),
                per_ray("reflected"),
            )?;
        }
        Ok(())
    }
}

impl PrimRow {
    /// The header of rows as they display.
    pub fn header() -> String {
        format!(
            "{:<28} {:>6} {:>11} {:>13} {:>16} {:>10} {:>8}",
            "primitive", "size", "elements", "median", "rate", "dispatches", "barriers"
        )
    }
}

impl Display for PrimRow {
    /// One line: size, time, rate, dispatches and barriers, bandwidth; a target's stages
    /// below.
    fn fmt(&self, f: &mut Formatter) -> Result {
        let unit = if self.primitive.contains("sort") || self.primitive.contains("tile") {
            "pair"
        } else {
            "elem"
        };
        write!(
            f,
            "{:<28} {:>6} {:>11} {:>10.4} ms {:>9.3} G{unit}/s {:>10} {:>8}",
            self.primitive,
            format!("2^{}", self.elements.max(1).ilog2()),
            self.elements,
            self.time.median_ms,
            self.rate() * 1e-9,
            self.work.dispatches,
            self.work.barriers,
        )?;
        if let Some(bandwidth) = self.bandwidth() {
            write!(f, " {:>9.1} GB/s", bandwidth * 1e-9)?;
        }
        if self.target {
            for stage in &self.time.stages {
                write!(f, "\n    {:<30} {:>10.4} ms", stage.name, stage.ms)?;
            }
        }
        Ok(())
    }
}

impl Display for Yardsticks {
    /// Two lines: the copy bandwidths and the cost of a dispatch + barrier.
    fn fmt(&self, f: &mut Formatter) -> Result {
        writeln!(
            f,
            "device-local copy, {} MiB: compute copy {:.1} GB/s (read+write), vkCmdCopyBuffer {:.1} GB/s",
            self.copy_bytes >> 20,
            self.compute_copy_bytes_per_s * 1e-9,
            self.cmd_copy_bytes_per_s * 1e-9
        )?;
        write!(
            f,
            "empty dispatch + barrier in a chain of {}: direct {:.2} us, indirect with zero groups {:.2} us",
            self.chain, self.dispatch_us, self.indirect_dispatch_us
        )
    }
}

impl Display for PrimsReport {
    /// The yardsticks and the targets (the rows display as they are measured).
    fn fmt(&self, f: &mut Formatter) -> Result {
        write!(f, "{}", self.yardsticks)?;
        for target in &self.targets {
            write!(
                f,
                "\n{}: {:.3} (target {}, ratio {:.2})",
                target.what,
                target.measured,
                target.target,
                target.measured / target.target
            )?;
        }
        Ok(())
    }
}

impl Display for FrameReport {
    /// A block: the frame per stage, the rays of each trace, the work of a frame, and the
    /// camera rays alone.
    fn fmt(&self, f: &mut Formatter) -> Result {
        writeln!(
            f,
            "{}, {} triangles, {}, {}x{}, {} lights, {} bounces: median of {} runs",
            self.scene,
            self.triangles,
            self.structure,
            self.width,
            self.height,
            self.lights,
            self.bounces,
            self.frame.runs
        )?;
        writeln!(
            f,
            "whole frame (deform, rebuild, camera rays, {} bounces, shadows, shading): {:.3} ms = {:.1} frames/s (GPU)",
            self.bounces,
            self.frame.median_ms,
            1e3 / self.frame.median_ms
        )?;
        for stage in &self.frame.stages {
            writeln!(f, "    {:<30} {:>10.4} ms", stage.name, stage.ms)?;
        }
        for t in &self.traces {
            writeln!(
                f,
                "{}: {} rays, {:.4} G rays/s",
                t.stage,
                t.rays,
                t.rays as f64 / t.ms * 1e-6
            )?;
        }
        if self.dropped_rays > 0 {
            writeln!(
                f,
                "warning: {} rays dropped (ray lists full)",
                self.dropped_rays
            )?;
        }
        writeln!(
            f,
            "work of a frame: {}; peak {:.1} MiB for the structure and the renderer",
            self.work,
            mib(self.peak_bytes)
        )?;
        traversals(f, "alone", &self.camera_rays)?;
        if let Some(native) = &self.native {
            writeln!(
                f,
                "driver: bottom level {:.4} ms + top level {:.4} ms, {:.1} MiB (canopy's frame \
                 structure is built inside the frame above)",
                native.bottom_level.median_ms,
                native.top_level.median_ms,
                mib(native.bytes)
            )?;
            for trace in &native.camera_rays {
                let canopy = self
                    .camera_rays
                    .iter()
                    .find(|t| t.query == trace.query)
                    .and_then(|t| t.time.as_ref());
                writeln!(
                    f,
                    "  {:<10} {trace}{}",
                    "driver rt",
                    canopy.map_or(String::new(), |c| format!(
                        "; canopy/driver time {:.3}",
                        c.median_ms / trace.time.median_ms
                    ))
                )?;
            }
        }
        Ok(())
    }
}

impl Display for AnimationReport {
    /// A table per measurement: skinning, Loop subdivision, the streamed sequence.
    fn fmt(&self, f: &mut Formatter) -> Result {
        if !self.skins.is_empty() {
            writeln!(f, "skinning (upload of the pose and the kernel):")?;
            for s in &self.skins {
                writeln!(
                    f,
                    "  {:>10} vertices  {:>9.3} ms  {:>8.2} G vertices/s  {} B uploaded/frame  \
                     {:.1} MB of vertex data  {}",
                    s.vertices,
                    s.timing.median_ms,
                    s.vertices as f64 / s.timing.median_ms * 1e-6,
                    s.uploaded_bytes,
                    s.memory_bytes as f64 / 1e6,
                    s.work
                )?;
            }
        }
        if !self.subdivisions.is_empty() {
            writeln!(
                f,
                "Loop subdivision (every level on the GPU; stencils built once):"
            )?;
            for s in &self.subdivisions {
                writeln!(
                    f,
                    "  {:>9} -> {:>10} triangles ({} levels, {} vertices)  {:>9.3} ms  \
                     stencils built in {:.0} ms on the CPU  {:.1} MB  {}",
                    s.control_triangles,
                    s.refined.0,
                    s.levels,
                    s.refined.1,
                    s.timing.median_ms,
                    s.setup_ms,
                    s.memory_bytes as f64 / 1e6,
                    s.work
                )?;
            }
        }
        if let Some(s) = &self.stream {
            writeln!(
                f,
                "sequence {} ({} files of {} vertices, {} B uploaded per frame), {} frames each:\n  \
                 streamed from disk {:.2} frames/s, held still {:.2} frames/s: {:.0}%; \
                 the frames waited {:.1} ms for files in all ({} reader threads, {:.2} ms a file)",
                s.sequence,
                s.files,
                s.vertices,
                s.uploaded_bytes,
                s.frames,
                s.streamed_fps,
                s.still_fps,
                100.0 * s.streamed_fps / s.still_fps,
                s.waited_ms,
                s.readers,
                s.read_ms
            )?;
        }
        Ok(())
    }
}

impl Display for CopyReport {
    /// One line: the copy's size, `vkCmdCopyBuffer` and each compute copy.
    fn fmt(&self, f: &mut Formatter) -> Result {
        write!(
            f,
            "device-local copy, {:.0} MiB (GB/s read + written): vkCmdCopyBuffer {:.1} ({:.4} ms)",
            mib(self.bytes),
            self.cmd_copy_bytes_per_s * 1e-9,
            self.cmd_copy.median_ms
        )?;
        for copy in &self.compute {
            write!(
                f,
                ", compute copy {} B/invocation {:.1} ({:.4} ms)",
                copy.bytes_per_invocation,
                copy.bytes_per_s * 1e-9,
                copy.time.median_ms
            )?;
        }
        Ok(())
    }
}

impl Display for ChainReport {
    /// One line: the chain, its time per dispatch and in all, and what was counted.
    fn fmt(&self, f: &mut Formatter) -> Result {
        write!(
            f,
            "{} empty dispatches x {} workgroup{}, {:<15} {:>8.3} us each, {:>9.2} us in all ({}; {} workgroups run)",
            self.length,
            self.groups,
            if self.groups == 1 { "" } else { "s" },
            if self.barriers {
                "with barriers:"
            } else {
                "no barriers:"
            },
            self.per_dispatch_us,
            self.total_us,
            self.work,
            self.workgroups_run
        )
    }
}

impl Display for NodeReadReport {
    /// A line for the tree, then one per kind of rays.
    fn fmt(&self, f: &mut Formatter) -> Result {
        write!(
            f,
            "LBVH over {} triangles ({:.1} MiB; {} B a node, {} B a leaf triangle), node reads:",
            self.triangles,
            mib(self.tree_bytes),
            self.node_bytes,
            self.primitive_bytes
        )?;
        for row in &self.rays {
            write!(
                f,
                "\n  {:<9} {:>9} rays {:>8.4} ms {:>7.3} G rays/s  nodes/ray {:>6.2}  nodes {:>7.1} GB/s = {:.3} of the compute copy  (nodes + triangles {:.1} GB/s)",
                row.rays.name(),
                row.count,
                row.time.median_ms,
                row.rays_per_s * 1e-9,
                row.nodes_per_ray,
                row.node_bytes_per_s * 1e-9,
                row.node_fraction_of_copy,
                row.fetched_bytes_per_s * 1e-9
            )?;
        }
        Ok(())
    }
}

impl Display for InstancesReport {
    /// The scene, the top tree's rebuild with its stages, the flattened build, then each kind
    /// of rays through both trees.
    fn fmt(&self, f: &mut Formatter) -> Result {
        writeln!(
            f,
            "{} instances of {} meshes ({} triangles; {} flattened)",
            self.instances, self.meshes, self.mesh_triangles, self.triangles
        )?;
        write!(f, "top tree rebuild {:.4} ms", self.top_build.median_ms)?;
        for stage in &self.top_build.stages {
            write!(f, "  [{} {:.4}]", stage.name, stage.ms)?;
        }
        write!(
            f,
            "\nflattened scene's LBVH build {:.4} ms",
            self.flattened_build.median_ms
        )?;
        for trace in &self.traversal {
            write!(
                f,
                "\n  flattened {}\n  two-level {}",
                trace.flattened, trace.two_level
            )?;
            if let Some(ratio) = trace.time_ratio {
                write!(f, "\n  two-level time / flattened time: {ratio:.3}")?;
            }
        }
        Ok(())
    }
}
