#version 460
// The BIH build's large-node stage, third kernel of a round: one workgroup per slice carries
// out its task's decision (bih/large_split.comp) on the slice's primitives. A leaf's run is
// copied into the leaf primitive list, a clip node's into the next round's index buffer, both
// at their own positions. A split's primitives go left or right by their centroid's bin, as
// the binning put them: per tile of WORKGROUP_SIZE primitives a workgroup scan orders each
// side, and one atomic add per side on the task's cursors places the tile, so the sides are
// stable within a tile but the slices' tiles interleave in whatever order they arrive (the
// partition is not stable; the tree does not depend on the order within a run).
#include "../common/prelude.glsl"
#include "../common/geometry.glsl"
#include "../common/workgroup_scan.glsl"
#include "bih/queue.glsl"
#include "bih/binned_sah.glsl"

layout(push_constant, scalar) uniform Push {
    uint64_t positions_address;       // vec3 per vertex
    uint64_t triangles_address;       // uvec3 per triangle
    uint64_t indices_in_address;      // u32 per primitive: this round's runs (unused in round 0)
    uint64_t indices_out_address;     // out: the next round's runs
    uint64_t leaf_primitives_address; // out: the leaves' runs
    uint64_t tasks_address;           // LargeTask per large task of this round, decided
    uint64_t slices_address;          // u32 per slice of this round: its task
    uint64_t counters_address;        // u32 counters (src/accel/bih/build.rs)
    uint slice_counter;               // index of this round's slice counter
    uint slice_size;                  // primitives per slice
} pc;

shared uint tile_base[2];

void main() {
    uint slice = flat_workgroup_id();
    if (slice >= U32s(pc.counters_address).v[pc.slice_counter]) {
        return;
    }
    uint lid = gl_LocalInvocationIndex;
    uint task_index = U32s(pc.slices_address).v[slice];
    LargeTasks tasks = LargeTasks(pc.tasks_address);
    LargeTask large = tasks.v[task_index];
    BihTask task = large.task;
    uint begin = (slice - large.slice_first) * pc.slice_size;
    uint end = min(begin + pc.slice_size, task.count);
    bool identity = (task.flags & TASK_IDENTITY) != 0u;
    U32s runs_in = U32s(pc.indices_in_address);
    U32s runs_out = U32s(pc.indices_out_address);

    if (large.kind != SPLIT) {
        U32s target = large.kind == LEAF ? U32s(pc.leaf_primitives_address) : runs_out;
        for (uint k = begin + lid; k < end; k += WORKGROUP_SIZE) {
            uint position = task.first + k;
            target.v[position] = identity ? position : runs_in.v[position];
        }
        return;
    }
    uint a = large.axis;
    float lo = large.centroid_lo[a];
    float scale = float(BINS) / (large.centroid_hi[a] - lo);
    for (uint tile = begin; tile < end; tile += WORKGROUP_SIZE) {
        uint k = tile + lid;
        bool valid = k < end;
        uint primitive = 0u;
        bool left = false;
        if (valid) {
            uint position = task.first + k;
            primitive = identity ? position : runs_in.v[position];
            Aabb box = triangle_box(pc.positions_address, pc.triangles_address, primitive);
            float c = (box.lo[a] + box.hi[a]) * 0.5;
            left = bin_of(c, lo, scale) < large.left_bins;
        }
        uint lefts;
        uint before = workgroup_exclusive_add(left ? 1u : 0u, lefts);
        uint in_tile = min(WORKGROUP_SIZE, end - tile);
        if (lid == 0u) {
            tile_base[0] = atomicAdd(tasks.v[task_index].left_cursor, lefts);
            tile_base[1] = atomicAdd(tasks.v[task_index].right_cursor, in_tile - lefts);
        }
        barrier();
        if (valid) {
            uint position = left ? tile_base[0] + before : large.left_count + tile_base[1] + (lid - before);
            runs_out.v[task.first + position] = primitive;
        }
        barrier();
    }
}
