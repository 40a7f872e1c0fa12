// The GPU point kd-tree builder's shared state (src/accel/pointkd/build.rs mirrors the
// structs): per-axis sorted point lists kept in step through the splits (seed 000 §5.1), the
// tasks of a level, and what a task's split tells the elements that move.
#ifndef CANOPY_POINTKD_BUILD
#define CANOPY_POINTKD_BUILD
#include "../common/prelude.glsl"
#include "../common/geometry.glsl"
#include "pointkd/format.glsl"

const uint NO_TASK = 0xffffffffu;
const uint NO_SPLIT = 3u;

// A node to build: its index, its entries [begin, end) in every list, its depth and cell.
struct PointKdTask {
    uint node;
    uint begin;
    uint end;
    uint depth;
    vec3 cell_lo;
    uint pad0;
    vec3 cell_hi;
    uint pad1;
};
layout(buffer_reference, scalar, buffer_reference_align = 16) buffer PointKdTasks { PointKdTask v[]; };

// Stores a task field by field (a whole-struct store of it crashes spirv-opt's optimizer).
void store_task(uint64_t queue, uint i, PointKdTask task) {
    PointKdTasks tasks = PointKdTasks(queue);
    tasks.v[i].node = task.node;
    tasks.v[i].begin = task.begin;
    tasks.v[i].end = task.end;
    tasks.v[i].depth = task.depth;
    tasks.v[i].cell_lo = task.cell_lo;
    tasks.v[i].cell_hi = task.cell_hi;
}

// A large task's split as the elements read it: axis (NO_SPLIT: the task ended here), plane,
// points going left, and the left child's task in the next level (the right one follows).
struct PointKdSplit {
    uint axis;
    float plane;
    uint left_count;
    uint left_task;
};

// Splits are stored as four words each, the plane read and written as a float (glslang
// loops forever on some kernels reading them through a buffer reference to PointKdSplit, or
// converting the plane's bits with uintBitsToFloat).
PointKdSplit load_split(uint64_t splits, uint t) {
    U32s words = U32s(splits);
    return PointKdSplit(words.v[4 * t], F32s(splits).v[4 * t + 1], words.v[4 * t + 2], words.v[4 * t + 3]);
}

void store_split(uint64_t splits, uint t, PointKdSplit split) {
    U32s words = U32s(splits);
    words.v[4 * t] = split.axis;
    F32s(splits).v[4 * t + 1] = split.plane;
    words.v[4 * t + 2] = split.left_count;
    words.v[4 * t + 3] = split.left_task;
}

// The build's counters.
struct PointKdBuildState {
    uint node_count;   // nodes allocated
    uint tasks;        // large tasks of this level
    uint next_tasks;   // tasks appended for the next level
    uint small_tasks;  // small tasks (built after the levels)
    uint medium_tasks; // medium tasks (built by medium.comp after the levels)
    uint to_partition; // list elements to partition this level (0: nothing splits)
    uint parity;       // which buffers hold the current lists and owners
    uint queue;        // which task queue this level reads
    uint overflow;     // a capacity was exceeded (the tree is incomplete)
};
layout(buffer_reference, scalar, buffer_reference_align = 16) buffer PointKdBuildStates { PointKdBuildState v[]; };

// The builder's buffers and parameters, the same push constants for every build kernel.
struct PointKdBuildRefs {
    uint64_t positions;   // vec3 per point
    uint64_t lists[2];    // 3 lists of `stride` point ids each, current and next
    uint64_t owners[2];   // task per list position, current and next
    uint64_t tasks[2];    // task queues
    uint64_t splits;      // PointKdSplit per task of the level
    uint64_t small;       // small tasks
    uint64_t medium;      // medium tasks
    uint64_t flags;       // scan input: element goes left
    uint64_t offsets;     // scan output
    uint64_t keys;        // sort keys: 3 lists of coordinate bits
    uint64_t nodes;       // PointKdNode
    uint64_t entries;     // vec4 per entry (the tree's)
    uint64_t state;       // PointKdBuildState
    uint64_t header;      // PointKdHeader (the tree's)
    uint64_t count_address; // the point count on the device (at most `count`), or 0
    uint count;           // points (with count_address: their bound)
    uint stride;          // list length (count rounded up to 4)
    uint node_capacity;
    uint task_capacity;
    uint small_capacity;
    uint large_node;      // T
    uint max_leaf;
    uint max_depth;
    float empty_space;    // Ce
    float traversal_cost; // Cts
    float radius;         // R (0: init.comp estimates it and writes it here)
    uint k_estimate;      // neighbours R is estimated for
    uint local_radius;    // 1: R was not given, small nodes price for their own density
    uint medium_capacity;
};

layout(buffer_reference, scalar, buffer_reference_align = 16) buffer PointKdBuildRefsBuffer { PointKdBuildRefs r; };

// Push constants hold only the address of the refs (they exceed 128 bytes).
layout(push_constant, scalar) uniform Push {
    uint64_t refs_address;
} pc;

PointKdBuildRefs refs;

// Every build kernel calls this first: the refs, with the point count read from the device
// when it is counted there.
void load_refs() {
    refs = PointKdBuildRefsBuffer(pc.refs_address).r;
    if (refs.count_address != 0ul) {
        refs.count = min(U32s(refs.count_address).v[0], refs.count);
    }
}

PointKdBuildStates build_state() {
    return PointKdBuildStates(refs.state);
}

vec3 point(uint id) {
    return Vec3s(refs.positions).v[id];
}

// The volume of the cell grown by `radius` on every side, as src/accel/pointkd/cpu.rs
// computes it.
float grown_volume(vec3 lo, vec3 hi, float radius) {
    precise vec3 side = (hi - lo) + 2.0 * radius;
    precise float volume = side.x * side.y * side.z;
    return volume;
}

// x^(-1/3) for a positive normal x: a bit-level first guess and four Newton steps of products
// and sums only, so src/accel/pointkd/cpu.rs inverse_cbrt computes the same bits.
float inverse_cbrt(float x) {
    precise float y = uintBitsToFloat(0x54a2fa8cu - floatBitsToUint(x) / 3u);
    for (uint i = 0; i < 4; ++i) {
        precise float step = 4.0 / 3.0 - x * (1.0 / 3.0) * y * y * y;
        y = y * step;
    }
    return y;
}

// The radius of a sphere holding k_estimate of `count` points spread evenly over a box of
// these extents (flat extents counted as a thousandth of the largest; 1 for no points or no
// extent), as src/accel/pointkd/cpu.rs density_radius computes it.
float density_radius(vec3 extent, uint count) {
    float largest = max(extent.x, max(extent.y, extent.z));
    if (count == 0 || !(largest > 0.0)) {
        return 1.0;
    }
    vec3 sides = max(extent, vec3(largest * 1e-3));
    precise float volume = sides.x * sides.y * sides.z;
    // (3 V k / (4 pi count))^(1/3), as products only, so the CPU computes the same bits.
    precise float sphere = volume * float(max(refs.k_estimate, 1u)) * (3.0 / (4.0 * 3.14159265358979));
    float root = inverse_cbrt(sphere);
    precise float radius = sphere * root * root * inverse_cbrt(float(count));
    return radius;
}

// The next float above x (Rust's f32::next_up).
float next_up(float x) {
    if (x == 0.0) {
        return uintBitsToFloat(1u);
    }
    uint bits = floatBitsToUint(x);
    return uintBitsToFloat(x > 0.0 ? bits + 1u : bits - 1u);
}

// The most points of a medium task: a node above T points whose whole subtree one workgroup of
// medium.comp builds. Its levels hold at most MEDIUM_LEVEL_TASKS tasks: only nodes above T
// points split, and fewer than MEDIUM_LEVEL_TASKS / 2 of them fit in a medium task.
const uint MEDIUM_LEVEL_TASKS = 128;

uint medium_limit() {
    return (MEDIUM_LEVEL_TASKS / 2) * (refs.large_node + 1) - 1;
}

// The decision of a large task (split.comp, medium.comp), as src/accel/pointkd/cpu.rs makes
// it, over its lists at `lists` (read coherently: medium.comp's workgroup rewrites them): the
// node's box from the ends of its sorted lists (O(1)); a leaf when it is small enough, as deep
// as allowed or all one point; a small task (exact VVH later) at or below T points; else the
// empty part of its cell cut off when it exceeds Ce on some side (the largest), or the spatial
// median of its box on its longest axis, its left points counted by binary search in the sorted
// list of its axis. A leaf is written and a small task appended here (axis NO_SPLIT returned);
// a split is returned (its left_task unset) with the box in `lo` and `hi` for the caller to
// allocate the children.
PointKdSplit decide_large_task(PointKdTask task, uint64_t lists_address, out vec3 lo, out vec3 hi) {
    CoherentU32s lists = CoherentU32s(lists_address);
    PointKdBuildStates state = build_state();
    uint n = task.end - task.begin;
    lo = vec3(INF);
    hi = vec3(-INF);
    if (n > 0) {
        for (uint a = 0; a < 3; ++a) {
            lo[a] = point(lists.v[a * refs.stride + task.begin])[a];
            hi[a] = point(lists.v[a * refs.stride + task.end - 1])[a];
        }
    }
    PointKdSplit split = PointKdSplit(NO_SPLIT, 0.0, 0, 0);
    PointKdNodes nodes = PointKdNodes(refs.nodes);
    if (n <= refs.max_leaf || task.depth >= refs.max_depth || lo == hi) {
        nodes.v[task.node] = PointKdNode(lo, POINT_KD_LEAF | (n << 2), hi, task.begin);
        return split;
    }
    if (n <= refs.large_node) {
        uint s = atomicAdd(state.v[0].small_tasks, 1);
        if (s < refs.small_capacity) {
            store_task(refs.small, s, task);
        } else {
            atomicOr(state.v[0].overflow, 1);
        }
        return split;
    }
    // Empty space first, the largest part beyond Ce.
    float best = -1.0;
    uint axis = 0;
    float plane = 0.0;
    for (uint a = 0; a < 3; ++a) {
        float extent = task.cell_hi[a] - task.cell_lo[a];
        float below = lo[a] - task.cell_lo[a];
        float above = task.cell_hi[a] - hi[a];
        float fraction_below = extent > 0.0 ? below / extent : 0.0;
        float fraction_above = extent > 0.0 ? above / extent : 0.0;
        if (fraction_below > refs.empty_space && fraction_below > best) {
            best = fraction_below;
            axis = a;
            plane = lo[a];
        }
        // A cut just above the points must still lie inside the cell, or it would cut
        // nothing off (a flat box in a cell a few ulps wide), level after level.
        if (fraction_above > refs.empty_space && fraction_above > best && next_up(hi[a]) < task.cell_hi[a]) {
            best = fraction_above;
            axis = a;
            plane = next_up(hi[a]);
        }
    }
    if (best < 0.0) {
        // The longest axis (the last of equals), its middle.
        axis = 0;
        for (uint a = 1; a < 3; ++a) {
            if (hi[a] - lo[a] >= hi[axis] - lo[axis]) {
                axis = a;
            }
        }
        // Exact as written: the product by 0.5 does not round, so a fused multiply-add agrees.
        float middle = lo[axis] + (hi[axis] - lo[axis]) * 0.5;
        plane = middle > lo[axis] ? middle : hi[axis];
    }
    // Points below the plane: a prefix of the axis's sorted list.
    uint first = task.begin;
    uint last = task.end;
    while (first < last) {
        uint mid = (first + last) / 2;
        if (point(lists.v[axis * refs.stride + mid])[axis] < plane) {
            first = mid + 1;
        } else {
            last = mid;
        }
    }
    return PointKdSplit(axis, plane, first - task.begin, 0);
}

// The split node `task` written with its children allocated as the pair from `children`, and
// the children's tasks (in `left` and `right`, the next level's).
void split_node(PointKdTask task, PointKdSplit split, vec3 lo, vec3 hi, uint children, out PointKdTask left, out PointKdTask right) {
    PointKdNodes nodes = PointKdNodes(refs.nodes);
    nodes.v[task.node] = PointKdNode(lo, split.axis | (children << 2), hi, floatBitsToUint(split.plane));
    vec3 left_hi = task.cell_hi;
    left_hi[split.axis] = split.plane;
    vec3 right_lo = task.cell_lo;
    right_lo[split.axis] = split.plane;
    uint mid_entry = task.begin + split.left_count;
    left = PointKdTask(children, task.begin, mid_entry, task.depth + 1, task.cell_lo, 0, left_hi, 0);
    right = PointKdTask(children + 1, mid_entry, task.end, task.depth + 1, right_lo, 0, task.cell_hi, 0);
}

// A split that could not be stored (a capacity exceeded): the node becomes a leaf of all its
// points and the build reports the overflow.
void overflow_leaf(PointKdTask task, vec3 lo, vec3 hi) {
    atomicOr(build_state().v[0].overflow, 1);
    PointKdNodes nodes = PointKdNodes(refs.nodes);
    nodes.v[task.node] = PointKdNode(lo, POINT_KD_LEAF | ((task.end - task.begin) << 2), hi, task.begin);
}

// Where the stable partition of a split task's list moves the element at `position`: among the
// task's entries from `begin`, its `left_count` left ones first, each side in list order;
// `left_before` elements of its list left of the split precede it within the task.
uint partition_target(uint position, uint begin, uint left_count, bool left, uint left_before) {
    return left ? begin + left_before : begin + left_count + (position - begin - left_before);
}

#endif
