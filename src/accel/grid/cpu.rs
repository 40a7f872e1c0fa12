//! The screen grid on the CPU: the reference of the GPU build (the same projection, clipping
//! and binning in f32, `glsl/grid/project.comp` and `references.comp`) and of the cast
//! (`glsl/grid/cast.comp`: the same slab order, the same test order within a slab, the same
//! end of a ray), and the checker that compares a grid built on the GPU with it.

use super::{GridFrame, GridParams};
use crate::geom::PinholeView;
use crate::geom::ray::{Hit, MISS, Ray, RayWork, intersect_triangle};

/// Pixels of rounding margin of the tile ranges (`MARGIN_PIXELS` in `project.comp`).
const MARGIN_PIXELS: f32 = 1.0 / 16.0;
/// Margin relative to the image coordinate (`MARGIN_RELATIVE`).
const MARGIN_RELATIVE: f32 = 1e-5;
/// Relative widening of a hit's depth before it ends a ray (`DEPTH_SLACK` in `cast.comp`).
const DEPTH_SLACK: f32 = 1.0 / 1024.0;

/// A triangle as the projection sees it: its inclusive tile range and nearest depth.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProjectedTriangle {
    /// First tile (column, row).
    pub first: [u32; 2],
    /// Last tile, inclusive.
    pub last: [u32; 2],
    /// Nearest depth along the view direction, clipped to the near plane.
    pub depth: f32,
}

impl ProjectedTriangle {
    /// Tiles covered.
    pub fn tiles(&self) -> u32 {
        (self.last[0] - self.first[0] + 1) * (self.last[1] - self.first[1] + 1)
    }

    /// Whether the range holds tile (`x`, `y`).
    pub fn covers(&self, x: u32, y: u32) -> bool {
        (self.first[0]..=self.last[0]).contains(&x) && (self.first[1]..=self.last[1]).contains(&y)
    }
}

/// A grid on the host: built by [`build`], or read back from the GPU.
#[derive(Clone, Debug, PartialEq)]
pub struct CpuGrid {
    /// Tile columns and rows.
    pub tiles: [u32; 2],
    /// Slabs per tile.
    pub slabs: u32,
    /// The frame's references and depth range.
    pub frame: GridFrame,
    /// Where each bin's references start (tiles * slabs + 1 entries).
    pub bin_starts: Vec<u32>,
    /// The triangle of each reference, ordered by bin, then by triangle.
    pub triangle_ids: Vec<u32>,
}

impl CpuGrid {
    /// The references of bin `(tile, slab)`.
    pub fn bin(&self, tile: u32, slab: u32) -> &[u32] {
        let bin = (tile * self.slabs + slab) as usize;
        &self.triangle_ids[self.bin_starts[bin] as usize..self.bin_starts[bin + 1] as usize]
    }

    /// Tiles in the image.
    pub fn tile_count(&self) -> u32 {
        self.tiles[0] * self.tiles[1]
    }
}

fn sub(a: [f32; 3], b: [f32; 3]) -> [f32; 3] {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

/// `view_dot` in `glsl/grid/format.glsl`: `(x0 y0 + x1 y1) + x2 y2`, unfused (GLSL's `dot`
/// may be evaluated otherwise).
fn dot(a: [f32; 3], b: [f32; 3]) -> f32 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

/// The inclusive range of pixel centres within `[lo, hi]` widened by the margin, clamped to
/// `0..size` (`pixel_range` in `project.comp`); `None` when empty.
fn pixel_range(lo: f32, hi: f32, size: u32, margin: f32) -> Option<(u32, u32)> {
    let first = (lo - 0.5 - margin * (MARGIN_PIXELS + MARGIN_RELATIVE * lo.abs())).ceil();
    let last = (hi - 0.5 + margin * (MARGIN_PIXELS + MARGIN_RELATIVE * hi.abs())).floor();
    let (first, last) = (first.max(0.0), last.min((size - 1) as f32));
    (first <= last).then_some((first as u32, last as u32))
}

/// Triangle `corners` projected through `view` (`project.comp`): its tile range and nearest
/// depth, or `None` when culled (behind the near plane, off screen, not finite). A degenerate
/// (zero-area) triangle is projected like any other, by its corners: the rule of
/// [`crate::geom`] (never hit, kept by every builder).
pub fn project(
    corners: [[f32; 3]; 3],
    view: &PinholeView,
    params: &GridParams,
) -> Option<ProjectedTriangle> {
    project_with_margin(corners, view, params, 1.0)
}

/// [`project`] with the rounding margin scaled by `margin` (0: the exact range of pixel
/// centres as f32 computes it; the checker bounds the GPU's ranges between 0 and 2).
fn project_with_margin(
    corners: [[f32; 3]; 3],
    view: &PinholeView,
    params: &GridParams,
    margin: f32,
) -> Option<ProjectedTriangle> {
    let (right_inverse, up_inverse) = view.inverse_basis().ok()?;
    let near = params.near;
    let finite = corners.iter().flatten().all(|x| x.is_finite());
    let points = corners.map(|p| {
        let offset = sub(p, view.origin);
        [
            dot(offset, right_inverse),
            dot(offset, up_inverse),
            dot(offset, view.forward),
        ]
    });
    let (mut lo, mut hi) = ([f32::INFINITY; 2], [f32::NEG_INFINITY; 2]);
    let mut depth = f32::INFINITY;
    let mut include = |p: [f32; 2]| {
        for k in 0..2 {
            lo[k] = lo[k].min(p[k]);
            hi[k] = hi[k].max(p[k]);
        }
    };
    for k in 0..3 {
        let (v, w) = (points[k], points[(k + 1) % 3]);
        if v[2] >= near {
            include([v[0] / v[2], v[1] / v[2]]);
            depth = depth.min(v[2]);
        }
        if (v[2] >= near) != (w[2] >= near) {
            let s = (near - v[2]) / (w[2] - v[2]);
            // GLSL's mix(x, y, s) = x * (1 - s) + y * s.
            let at = |k: usize| (v[k] * (1.0 - s) + w[k] * s) / near;
            include([at(0), at(1)]);
            depth = near;
        }
    }
    if !finite || depth == f32::INFINITY {
        return None;
    }
    let (width, height) = (view.width as f32, view.height as f32);
    let xs = pixel_range(
        (lo[0] + 1.0) * 0.5 * width,
        (hi[0] + 1.0) * 0.5 * width,
        view.width,
        margin,
    )?;
    let ys = pixel_range(
        (1.0 - hi[1]) * 0.5 * height,
        (1.0 - lo[1]) * 0.5 * height,
        view.height,
        margin,
    )?;
    let t = params.tile_size;
    Some(ProjectedTriangle {
        first: [xs.0 / t, ys.0 / t],
        last: [xs.1 / t, ys.1 / t],
        depth,
    })
}

/// Every triangle of the mesh projected (`None`: culled).
pub fn project_all(
    positions: &[[f32; 3]],
    triangles: &[[u32; 3]],
    view: &PinholeView,
    params: &GridParams,
) -> Vec<Option<ProjectedTriangle>> {
    triangles
        .iter()
        .map(|t| project(t.map(|i| positions[i as usize]), view, params))
        .collect()
}

/// The grid of the mesh seen through `view`, as the GPU builds it.
pub fn build(
    positions: &[[f32; 3]],
    triangles: &[[u32; 3]],
    view: &PinholeView,
    params: &GridParams,
) -> CpuGrid {
    let tiles = [
        view.width.div_ceil(params.tile_size),
        view.height.div_ceil(params.tile_size),
    ];
    let projected = project_all(positions, triangles, view, params);
    let mut frame = GridFrame::EMPTY;
    for p in projected.iter().flatten() {
        frame.needed += p.tiles() as u64;
        frame.z_min_bits = frame.z_min_bits.min(p.depth.to_bits());
        frame.z_max_bits = frame.z_max_bits.max(p.depth.to_bits());
    }
    frame.references = frame.needed as u32;
    let slabs = params.slabs;
    let bins = (tiles[0] * tiles[1] * slabs) as usize;
    let mut members: Vec<Vec<u32>> = vec![Vec::new(); bins];
    for (i, p) in projected.iter().enumerate() {
        let Some(p) = p else { continue };
        let slab = frame.slab_of(slabs, p.depth);
        for y in p.first[1]..=p.last[1] {
            for x in p.first[0]..=p.last[0] {
                members[((y * tiles[0] + x) * slabs + slab) as usize].push(i as u32);
            }
        }
    }
    let mut bin_starts = Vec::with_capacity(bins + 1);
    let mut triangle_ids = Vec::with_capacity(frame.needed as usize);
    for bin in &members {
        bin_starts.push(triangle_ids.len() as u32);
        triangle_ids.extend_from_slice(bin);
    }
    bin_starts.push(triangle_ids.len() as u32);
    CpuGrid {
        tiles,
        slabs,
        frame,
        bin_starts,
        triangle_ids,
    }
}

/// The closest hit of every pixel's ray (`rays`: one per pixel of `view`, row-major) through
/// `grid`, and its work (non-empty slabs searched, triangles tested), as `cast.comp` finds
/// them.
pub fn cast(
    grid: &CpuGrid,
    positions: &[[f32; 3]],
    triangles: &[[u32; 3]],
    view: &PinholeView,
    tile_size: u32,
    rays: &[Ray],
) -> (Vec<Hit>, Vec<RayWork>) {
    let mut hits = vec![Hit::default(); rays.len()];
    let mut work = vec![RayWork::default(); rays.len()];
    for (index, ray) in rays.iter().enumerate() {
        let (x, y) = (index as u32 % view.width, index as u32 / view.width);
        let tile = (y / tile_size) * grid.tiles[0] + x / tile_size;
        let depth_per_t = dot(ray.direction, view.forward);
        let mut hit = Hit::miss(ray);
        for slab in 0..grid.slabs {
            let bin = grid.bin(tile, slab);
            if !bin.is_empty() {
                work[index].nodes_visited += 1;
                work[index].primitives_tested += bin.len() as u32;
            }
            for &id in bin {
                let [a, b, c] = triangles[id as usize].map(|v| positions[v as usize]);
                let shortened = Ray {
                    tmax: hit.t,
                    ..*ray
                };
                if let Some((t, u, v)) = intersect_triangle(&shortened, a, b, c) {
                    hit = Hit {
                        t,
                        triangle: id,
                        u,
                        v,
                    };
                }
            }
            if hit.triangle != MISS {
                let depth = hit.t * depth_per_t * (1.0 + DEPTH_SLACK);
                if !grid.frame.behind_slab_front(grid.slabs, slab + 1, depth) {
                    break;
                }
            }
        }
        hits[index] = hit;
    }
    (hits, work)
}

/// What a checked grid holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct GridStats {
    /// Bins (tiles x slabs).
    pub bins: u64,
    /// Bins holding references.
    pub occupied_bins: u64,
    /// References.
    pub references: u64,
    /// Triangles referenced at least once.
    pub triangles_in_view: u64,
}

/// Checks a grid built on the GPU against the reference: the bins are well formed and ordered
/// by triangle; every triangle is referenced exactly in the tiles of one rectangle, between
/// the reference's exact range of pixel centres and that range with twice the rounding margin;
/// the depth range is that of the referenced triangles' depths and each lies in its slab of
/// that range, bit for bit as the reference computes them (depths and slabs are made of
/// correctly rounded products and sums on every device; which triangles are in view is
/// decided within the margins, so the range is taken over those the grid holds). The error
/// names the first difference.
pub fn check(
    positions: &[[f32; 3]],
    triangles: &[[u32; 3]],
    view: &PinholeView,
    params: &GridParams,
    grid: &CpuGrid,
) -> Result<GridStats, String> {
    let (tiles, slabs) = (
        [
            view.width.div_ceil(params.tile_size),
            view.height.div_ceil(params.tile_size),
        ],
        params.slabs,
    );
    let bins = (tiles[0] * tiles[1] * slabs) as usize;
    if grid.tiles != tiles || grid.slabs != slabs || grid.bin_starts.len() != bins + 1 {
        return Err(format!(
            "grid of {:?} tiles x {} slabs ({} bin starts), expected {tiles:?} x {slabs}",
            grid.tiles,
            grid.slabs,
            grid.bin_starts.len()
        ));
    }
    let references = grid.frame.references as usize;
    if grid.frame.needed != references as u64
        || grid.triangle_ids.len() != references
        || grid.bin_starts[0] != 0
        || grid.bin_starts[bins] as usize != references
        || grid.bin_starts.windows(2).any(|w| w[0] > w[1])
    {
        return Err(format!(
            "bins do not partition the {} references ({} needed)",
            references, grid.frame.needed
        ));
    }
    // Each triangle's (tile, slab) references.
    let mut found: Vec<Vec<(u32, u32)>> = vec![Vec::new(); triangles.len()];
    let mut stats = GridStats {
        bins: bins as u64,
        references: references as u64,
        ..GridStats::default()
    };
    for bin in 0..bins {
        let members =
            &grid.triangle_ids[grid.bin_starts[bin] as usize..grid.bin_starts[bin + 1] as usize];
        stats.occupied_bins += !members.is_empty() as u64;
        if members.windows(2).any(|w| w[0] >= w[1]) {
            return Err(format!("bin {bin}: triangles not in increasing order"));
        }
        for &t in members {
            let Some(list) = found.get_mut(t as usize) else {
                return Err(format!("bin {bin}: triangle {t} out of range"));
            };
            list.push((bin as u32 / slabs, bin as u32 % slabs));
        }
    }
    let corners = |i: usize| triangles[i].map(|v| positions[v as usize]);
    let outers: Vec<Option<ProjectedTriangle>> = (0..triangles.len())
        .map(|i| project_with_margin(corners(i), view, params, 2.0))
        .collect();
    let mut range = GridFrame::EMPTY;
    for (outer, refs) in outers.iter().zip(&found) {
        if let (Some(outer), false) = (outer, refs.is_empty()) {
            range.z_min_bits = range.z_min_bits.min(outer.depth.to_bits());
            range.z_max_bits = range.z_max_bits.max(outer.depth.to_bits());
        }
    }
    let bits = |frame: &GridFrame| (frame.z_min_bits, frame.z_max_bits);
    if references > 0 && bits(&grid.frame) != bits(&range) {
        return Err(format!(
            "depth range {:?}, expected {:?} (of the triangles referenced)",
            grid.frame.depth_range(),
            range.depth_range()
        ));
    }
    for (i, outer) in outers.into_iter().enumerate() {
        let corners = corners(i);
        let inner = project_with_margin(corners, view, params, 0.0);
        let refs = &found[i];
        stats.triangles_in_view += !refs.is_empty() as u64;
        let tile_xy = |tile: u32| (tile % tiles[0], tile / tiles[0]);
        let fail = |what: &str| {
            Err(format!(
                "triangle {i} {corners:?}: {what} (references {refs:?}, expected between {inner:?} and {outer:?})"
            ))
        };
        if refs.is_empty() {
            if inner.is_some() {
                return fail("not referenced");
            }
            continue;
        }
        let Some(outer) = outer else {
            return fail("referenced but out of view");
        };
        // One rectangle of tiles, each once.
        let (xs, ys): (Vec<u32>, Vec<u32>) = refs.iter().map(|&(t, _)| tile_xy(t)).unzip();
        let first = [*xs.iter().min().unwrap(), *ys.iter().min().unwrap()];
        let last = [*xs.iter().max().unwrap(), *ys.iter().max().unwrap()];
        let rectangle = ProjectedTriangle {
            first,
            last,
            depth: 0.0,
        };
        if rectangle.tiles() as usize != refs.len() {
            return fail("tiles not one rectangle, each once");
        }
        let within = |a: &ProjectedTriangle, b: &ProjectedTriangle| {
            b.covers(a.first[0], a.first[1]) && b.covers(a.last[0], a.last[1])
        };
        if !within(&rectangle, &outer) || inner.is_some_and(|inner| !within(&inner, &rectangle)) {
            return fail("tiles outside the margins");
        }
        let slab = refs[0].1;
        if refs.iter().any(|&(_, s)| s != slab) {
            return fail("references in several slabs");
        }
        let expected = range.slab_of(slabs, outer.depth);
        if slab != expected {
            return fail(&format!(
                "slab {slab}, expected {expected} (depth {})",
                outer.depth
            ));
        }
    }
    Ok(stats)
}
