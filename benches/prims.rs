//! `cargo bench --bench prims`: every GPU primitive at small sizes (2^10..2^16), the copy
//! bandwidth and the dispatch cost, with GPU timestamps (`canopy::bench::prims`, as `canopy
//! bench prims`, whose defaults go to 2^26 for a GPU).

mod common;

use canopy::bench::prims::{PrimRow, PrimsConfig, run};

fn main() {
    let ctx = common::context();
    let config = PrimsConfig {
        min_log2: 10,
        max_log2: 16,
        step: 2,
        repeats: 5,
        scan_target_log2: Some(18),
        sort_target_log2: Some(16),
        ..PrimsConfig::default()
    };
    println!("{}", PrimRow::header());
    let report = run(&ctx, &config, |row| println!("{row}")).expect("the primitives ran");
    println!("{report}");
    common::write_json("prims", &report);
}
