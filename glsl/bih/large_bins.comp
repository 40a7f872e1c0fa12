#version 460
// The BIH build's large-node stage, first kernel of a round: one workgroup per slice (up to
// SLICE primitives of one large task's run) bins its primitives as bih/binned_sah.glsl
// describes and merges its bins into its task's bins in device memory with atomics (only
// the bins it filled), so that a node of a million primitives is binned by hundreds of
// workgroups at once. Besides each bin's count and box span on its axis, it gathers the
// bin's centroid box, from which the split kernel gives each large child the box of its
// centroids without another pass.
// In round 0 it first runs in BOUNDS mode: the slices reduce the root's centroid box and box
// into root_bounds (subgroup min/max, then global atomics), which the BINS pass of round 0
// uses as the root's centroid box.
#include "../common/prelude.glsl"
#include "../common/geometry.glsl"
#include "bih/queue.glsl"
#include "bih/binned_sah.glsl"

layout(push_constant, scalar) uniform Push {
    uint64_t positions_address;   // vec3 per vertex
    uint64_t triangles_address;   // uvec3 per triangle
    uint64_t indices_address;     // u32 per primitive: this round's runs (unused in round 0)
    uint64_t tasks_address;       // LargeTask per large task of this round
    uint64_t slices_address;      // u32 per slice of this round: its task
    uint64_t bin_counts_address;  // u32 per task slot and bin
    uint64_t bin_lows_address;    // BIN_LANES ordered u32 per task slot and bin
    uint64_t bin_highs_address;   // BIN_LANES ordered u32 per task slot and bin
    uint64_t root_bounds_address; // 12 ordered u32: the root's centroid lo, hi, box lo, hi
    uint64_t counters_address;    // u32 counters (src/accel/bih/build.rs)
    uint slice_counter;           // index of this round's slice counter
    uint round;                   // this round (the depth of its nodes)
    uint slice_size;              // primitives per slice
    uint bounds_mode;             // 1: reduce the root's bounds; 0: bin
} pc;

shared uint bin_centroid_lo[3u * BINS * 3u];
shared uint bin_centroid_hi[3u * BINS * 3u];
shared uint root_box[12];

Aabb primitive_box(uint primitive) {
    return triangle_box(pc.positions_address, pc.triangles_address, primitive);
}

void main() {
    uint slice = flat_workgroup_id();
    if (slice >= U32s(pc.counters_address).v[pc.slice_counter]) {
        return;
    }
    uint lid = gl_LocalInvocationIndex;
    uint task_index = U32s(pc.slices_address).v[slice];
    LargeTask large = LargeTasks(pc.tasks_address).v[task_index];
    BihTask task = large.task;
    uint begin = (slice - large.slice_first) * pc.slice_size;
    uint end = min(begin + pc.slice_size, task.count);
    bool identity = (task.flags & TASK_IDENTITY) != 0u;
    U32s runs = U32s(pc.indices_address);
    U32s root_bounds = U32s(pc.root_bounds_address);

    if (pc.bounds_mode != 0u) {
        vec3 c_lo = vec3(INF), c_hi = vec3(-INF), b_lo = vec3(INF), b_hi = vec3(-INF);
        for (uint k = begin + lid; k < end; k += WORKGROUP_SIZE) {
            uint position = task.first + k;
            Aabb box = primitive_box(identity ? position : runs.v[position]);
            vec3 c = (box.lo + box.hi) * 0.5;
            c_lo = min(c_lo, c);
            c_hi = max(c_hi, c);
            b_lo = min(b_lo, box.lo);
            b_hi = max(b_hi, box.hi);
        }
        c_lo = subgroupMin(c_lo);
        c_hi = subgroupMax(c_hi);
        b_lo = subgroupMin(b_lo);
        b_hi = subgroupMax(b_hi);
        if (subgroupElect()) {
            for (uint a = 0; a < 3u; ++a) {
                atomicMin(root_bounds.v[a], ordered(c_lo[a]));
                atomicMax(root_bounds.v[3u + a], ordered(c_hi[a]));
                atomicMin(root_bounds.v[6u + a], ordered(b_lo[a]));
                atomicMax(root_bounds.v[9u + a], ordered(b_hi[a]));
            }
        }
        return;
    }

    clear_bins();
    for (uint i = lid; i < 3u * BINS * 3u; i += WORKGROUP_SIZE) {
        bin_centroid_lo[i] = 0xffffffffu;
        bin_centroid_hi[i] = 0u;
    }
    vec3 centroid_lo = large.centroid_lo;
    vec3 centroid_hi = large.centroid_hi;
    if (pc.round == 0u) {
        centroid_lo = vec3(unordered(root_bounds.v[0]), unordered(root_bounds.v[1]), unordered(root_bounds.v[2]));
        centroid_hi = vec3(unordered(root_bounds.v[3]), unordered(root_bounds.v[4]), unordered(root_bounds.v[5]));
    }
    barrier();
    vec3 extent = centroid_hi - centroid_lo;
    vec3 scale = vec3(float(BINS)) / extent;
    for (uint k = begin + lid; k < end; k += WORKGROUP_SIZE) {
        uint position = task.first + k;
        Aabb box = primitive_box(identity ? position : runs.v[position]);
        vec3 c = (box.lo + box.hi) * 0.5;
        for (uint a = 0; a < 3u; ++a) {
            // Where the centroids do not spread, everything goes to the first bin: its span
            // is still the node's box on that axis.
            uint bin = a * BINS + (splittable(extent[a]) ? bin_of(c[a], centroid_lo[a], scale[a]) : 0u);
            atomicAdd(bin_count[bin], 1u);
            atomicMin(bin_span[bin * 2u], ordered(box.lo[a]));
            atomicMax(bin_span[bin * 2u + 1u], ordered(box.hi[a]));
            for (uint e = 0; e < 3u; ++e) {
                atomicMin(bin_centroid_lo[bin * 3u + e], ordered(c[e]));
                atomicMax(bin_centroid_hi[bin * 3u + e], ordered(c[e]));
            }
        }
    }
    barrier();
    // Merge the filled bins into the task's (its slot is its index in the round).
    for (uint bin = lid; bin < 3u * BINS; bin += WORKGROUP_SIZE) {
        if (bin_count[bin] == 0u) {
            continue;
        }
        uint at = global_bin(task_index, bin);
        atomicAdd(U32s(pc.bin_counts_address).v[at], bin_count[bin]);
        U32s lows = U32s(pc.bin_lows_address);
        U32s highs = U32s(pc.bin_highs_address);
        atomicMin(lows.v[at * BIN_LANES], bin_span[bin * 2u]);
        atomicMax(highs.v[at * BIN_LANES], bin_span[bin * 2u + 1u]);
        for (uint e = 0; e < 3u; ++e) {
            atomicMin(lows.v[at * BIN_LANES + 1u + e], bin_centroid_lo[bin * 3u + e]);
            atomicMax(highs.v[at * BIN_LANES + 1u + e], bin_centroid_hi[bin * 3u + e]);
        }
    }
}
