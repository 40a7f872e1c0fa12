//! Point clouds held relative to an origin, so that georeferenced coordinates (LAS/LAZ, E57:
//! hundreds of kilometres from zero, where an `f32` keeps metres, not millimetres) keep their
//! precision in canopy's `f32` work: the points minus the origin, in `f32`, and the origin in
//! the file's own `f64`.

/// A point cloud relative to an origin.
#[derive(Clone, Debug, PartialEq)]
pub struct OffsetCloud {
    /// Where the points are relative to, in the file's coordinates.
    pub origin: [f64; 3],
    /// Each point's position minus the origin.
    pub points: Vec<[f32; 3]>,
}

impl OffsetCloud {
    /// `absolute` points relative to `origin`, or the index of the first whose coordinates
    /// are not finite there.
    pub(crate) fn relative(origin: [f64; 3], absolute: &[[f64; 3]]) -> Result<Self, usize> {
        let points = absolute
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let relative = [p[0] - origin[0], p[1] - origin[1], p[2] - origin[2]];
                let as_f32 = relative.map(|c| c as f32);
                as_f32
                    .iter()
                    .all(|c| c.is_finite())
                    .then_some(as_f32)
                    .ok_or(i)
            })
            .collect::<Result<_, _>>()?;
        Ok(Self { origin, points })
    }
}
