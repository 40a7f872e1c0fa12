//! The CPU side of `canopy bench knn`: every point's k nearest neighbours through the `kiddo`
//! crate's immutable k-d tree, on every core (rayon), over the same seeded clouds that
//! `canopy bench knn` makes (uniform in the unit cube; evenly spread on the unit sphere).
//!
//! Usage: `canopy-knn-cpu [--points 1000000,10000000] [--k 16,50] [--distribution uniform]
//! [--repeats 5]`. Prints the build and the queries' wall-clock times (median of the repeats),
//! the cores busy during the queries (CPU time over wall time, so that "all cores" is seen,
//! not assumed), and checks a sample of answers against brute force.

use kiddo::{ImmutableKdTree, SquaredEuclidean};
use rayon::prelude::*;
use std::num::NonZero;
use std::time::Instant;

/// SplitMix64, as `canopy::rng::Rng`: the same seed gives `canopy bench knn`'s points.
struct SplitMix(u64);

impl SplitMix {
    fn next_u32(&mut self) -> u32 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) >> 32) as u32
    }

    fn unit(&mut self) -> f32 {
        (self.next_u32() >> 8) as f32 / (1u32 << 24) as f32
    }
}

fn cloud(distribution: &str, n: u32) -> Result<Vec<[f32; 3]>, String> {
    match distribution {
        "uniform" => {
            let mut rng = SplitMix(n as u64 ^ 0x6b6e6e);
            Ok((0..n)
                .map(|_| std::array::from_fn(|_| rng.unit()))
                .collect())
        }
        "surface" => {
            let golden = std::f64::consts::PI * (3.0 - 5f64.sqrt());
            Ok((0..n)
                .map(|i| {
                    let y = 1.0 - 2.0 * (i as f64 + 0.5) / n as f64;
                    let r = (1.0 - y * y).sqrt();
                    let a = golden * i as f64;
                    [(r * a.cos()) as f32, y as f32, (r * a.sin()) as f32]
                })
                .collect())
        }
        other => Err(format!("'{other}': expected uniform or surface")),
    }
}

/// Seconds of CPU time this process has used (user and system, every thread).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command's closing parenthesis; utime and stime are the 12th and 13th.
    let rest = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = [11, 12]
        .iter()
        .filter_map(|&i| fields.get(i)?.parse::<f64>().ok())
        .sum();
    ticks / 100.0
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn list<T: std::str::FromStr>(text: &str) -> Result<Vec<T>, String> {
    text.split(',')
        .map(|t| {
            t.trim()
                .parse()
                .map_err(|_| format!("'{t}' is not a number"))
        })
        .collect()
}

fn main() -> Result<(), String> {
    let (mut sizes, mut ks, mut distribution, mut repeats) = (
        vec![1_000_000u32],
        vec![16u32],
        "uniform".to_string(),
        5usize,
    );
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or(format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--points" => sizes = list(&value)?,
            "--k" => ks = list(&value)?,
            "--distribution" => distribution = value,
            "--repeats" => repeats = value.parse().map_err(|_| "bad --repeats")?,
            other => return Err(format!("unknown option {other}")),
        }
    }
    println!(
        "kiddo 5 ImmutableKdTree, {} threads (rayon), median of {repeats}",
        rayon::current_num_threads()
    );
    for &n in &sizes {
        let points = cloud(&distribution, n)?;
        let mut builds = Vec::new();
        let mut tree = None;
        for _ in 0..repeats {
            let start = Instant::now();
            tree = Some(ImmutableKdTree::<f32, 3>::new_from_slice(&points));
            builds.push(start.elapsed().as_secs_f64() * 1e3);
        }
        let tree = tree.ok_or("--repeats must be at least 1")?;
        println!(
            "{distribution} {n} points: build {:.2} ms (one thread)",
            median(builds)
        );
        for &k in &ks {
            let want = NonZero::new(k as usize).ok_or("k must be at least 1")?;
            let mut ids = vec![0u32; n as usize * k as usize];
            let mut d2 = vec![0f32; n as usize * k as usize];
            let (mut walls, mut busy) = (Vec::new(), Vec::new());
            for _ in 0..repeats {
                let (cpu, start) = (cpu_seconds(), Instant::now());
                ids.par_chunks_mut(k as usize)
                    .zip(d2.par_chunks_mut(k as usize))
                    .enumerate()
                    .for_each(|(i, (ids, d2))| {
                        let nearest = tree.nearest_n::<SquaredEuclidean>(&points[i], want);
                        for (j, found) in nearest.iter().enumerate() {
                            ids[j] = found.item as u32;
                            d2[j] = found.distance;
                        }
                    });
                let wall = start.elapsed().as_secs_f64();
                walls.push(wall * 1e3);
                busy.push((cpu_seconds() - cpu) / wall);
            }
            // A sample against brute force: the k-th distance must be the true one.
            let step = (n as usize / 16).max(1);
            for i in (0..n as usize).step_by(step) {
                let mut all: Vec<f32> = points
                    .iter()
                    .map(|p| (0..3).map(|a| (p[a] - points[i][a]).powi(2)).sum())
                    .collect();
                let kth = (k as usize).min(all.len()) - 1;
                all.select_nth_unstable_by(kth, f32::total_cmp);
                let got = d2[i * k as usize + kth];
                if got != all[kth] {
                    return Err(format!(
                        "point {i}: k-th distance {got}, brute force {}",
                        all[kth]
                    ));
                }
            }
            let ms = median(walls);
            println!(
                "  k {k}: {n} queries {ms:.2} ms = {:.1} M queries/s, {:.1} cores busy",
                n as f64 / ms * 1e-3,
                median(busy)
            );
        }
    }
    Ok(())
}
