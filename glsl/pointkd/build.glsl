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
    uint pad;
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

// Whether x is subnormal, read from its bits: a device that flushes subnormals to zero
// (NVIDIA's) compares and computes with x as with zero, so a float test cannot tell.
bool is_subnormal(float x) {
    uint bits = floatBitsToUint(x);
    return (bits & 0x7f800000u) == 0u && (bits & 0x7fffffffu) != 0u;
}

// The least float above x that is zero or normal (src/accel/pointkd/cpu.rs next_up_normal):
// the next float, or, where that is subnormal (x zero or the least normal's negative), the
// least positive normal or zero. A plane at the least subnormal would be zero to a device that
// flushes, and the points at zero below it would go right.
float next_up_normal(float x) {
    uint bits = floatBitsToUint(x);
    if ((bits & 0x7fffffffu) == 0u) {
        return uintBitsToFloat(0x00800000u);
    }
    float up = uintBitsToFloat((bits >> 31) == 0u ? bits + 1u : bits - 1u);
    if (is_subnormal(up)) {
        return (bits >> 31) == 0u ? uintBitsToFloat(0x00800000u) : 0.0;
    }
    return up;
}

#endif
