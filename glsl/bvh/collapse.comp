#version 460
// The 8-wide compressed BVH (bvh/wide_format.glsl) of a binary BVH (bvh/format.glsl), in one
// dispatch run as a queue of nodes, top down. A wide node made from binary node x starts with x's
// two children as its slots; while it has fewer than eight and one is internal, the internal slot
// of the largest box (by the sum of its sides; the first on ties) is replaced by its children, the
// left in its place and the right in the next free slot. The leaves among the slots are copied to
// the wide tree's triangles; the internal slots are allocated as consecutive nodes, and each
// becomes a task: a later node to make from that binary node, published in the task slot of its
// node index. Each invocation takes a ticket t in arrival order and makes node t (0 is the root)
// once its task is published. A child is allocated after its parent, so it has the larger index: an
// invocation only waits for invocations that took their tickets earlier and so have started, on any
// scheduler (lavapipe hands a dispatch's workgroups to its threads out of order). On devices that
// run a workgroup's subgroups one after another (lavapipe) the loop is workgroup-uniform, with a
// barrier per round, so that every subgroup moves. An invocation whose task never comes (the tree
// has fewer nodes than the buffers hold) stops when no allocated node is left to make. On the way
// the kernel records the most stack entries a ray can hold (a node with k internal children pushes
// k and pops one) and the tree's height; the last workgroup to finish writes them for the host with
// the nodes left unmade (none unless a wait was given up, below) and puts the counters back as the
// next build expects them. Every task slot is reset once its node is made, so no fill runs between
// builds.
// src/accel/bvh/wide/cpu.rs collapse is the reference (its layout is breadth first).
#include "../common/prelude.glsl"
#include "bvh/format.glsl"
#include "bvh/wide_format.glsl"
#include "../common/geometry.glsl"
#include "../common/workgroup_any.glsl"

const uint NO_TASK = 0xffffffffu;

// Whether the whole workgroup loops until its last invocation is done, with a barrier per
// round: set on devices that run a workgroup's subgroups one after another (lavapipe), where
// a subgroup waiting for a task that another subgroup of its workgroup makes would otherwise
// never let it run. Elsewhere each subgroup loops on its own.
layout(constant_id = 2) const bool WORKGROUP_LOOP = false;

layout(push_constant, scalar) uniform Push {
    uint64_t nodes_address;          // BvhNode per internal node of the binary tree
    uint64_t leaf_triangles_address; // LeafTriangle per binary leaf
    uint64_t wide_nodes_address;     // out: WideNode per wide node
    uint64_t wide_triangles_address; // out: LeafTriangle per leaf in the wide tree's order
    uint64_t tasks_address;          // Task per wide node; x is NO_TASK between builds
    uint64_t queue_address;          // u32 per QUEUE_* counter, at its initial value between builds
    uint64_t stats_address;          // out (host-visible): wide nodes, stack need, height, nodes left unmade
    uint task_capacity;              // wide nodes the buffers hold: an invocation each
} pc;

// A wide node to make: x, its binary node, NO_TASK until published; y, the stack entries its
// ancestors leave pushed (low 16 bits) and its depth (high 16 bits), both saturating.
layout(buffer_reference, scalar, buffer_reference_align = 8) coherent buffer Tasks { uvec2 v[]; };

// The queue's counters, [their values between builds].
const uint QUEUE_TICKETS = 0u;     // tasks handed to invocations [0]
const uint QUEUE_NODES = 1u;       // wide nodes allocated [1: the root]
const uint QUEUE_TRIANGLES = 2u;   // leaf triangles allocated [0]
const uint QUEUE_OUTSTANDING = 3u; // nodes allocated and not yet made [1]
const uint QUEUE_EXITED = 4u;      // workgroups done [0]
const uint QUEUE_STACK_NEED = 5u;  // [0]
const uint QUEUE_HEIGHT = 6u;      // [0]

// The most times an invocation finds its task unpublished before it stops waiting. Mesa's
// lavapipe gives an invocation 65,535 loop iterations in all and then silently leaves every
// loop (docs/architecture.md); this keeps a wait within that budget (each round of the loop
// costs one iteration per subgroup of the workgroup, and making a node a few hundred). A task
// whose parent is made later than that (a preempted CPU thread) is left unmade, and the
// host, seeing the tree incomplete, builds it again.
const uint SPIN_LIMIT = 4096u;

bool is_internal(uint child) {
    return child != INVALID_CHILD && (child & LEAF_BIT) == 0u;
}

// The sum of a box's sides, in the reference's order of operations: subtractions and
// additions only, which every device rounds alike (a product summed may be fused into a
// multiply-add by one compiler and not by another).
float half_perimeter(vec3 lo, vec3 hi) {
    precise vec3 d = hi - lo;
    precise float size = d.x + d.y + d.z;
    return size;
}

// The smallest step exponent whose plane 255 decodes at or past `hi`.
int step_exponent(float lo, float hi) {
    precise float extent = hi - lo;
    int e = extent >= pow2(MIN_STEP_EXPONENT)
                ? int((floatBitsToUint(extent) >> 23) & 0xffu) - 127 - 7
                : MIN_STEP_EXPONENT;
    e = clamp(e, MIN_STEP_EXPONENT, MAX_STEP_EXPONENT);
    while (e < MAX_STEP_EXPONENT && decode_plane(lo, pow2(e), 255u) < hi) {
        ++e;
    }
    return e;
}

// The largest plane at or below x.
uint quantize_low(float origin, int e, float x) {
    precise float scaled = (x - origin) * pow2(-e);
    uint q = uint(clamp(floor(scaled), 0.0, 255.0));
    while (q > 0u && decode_plane(origin, pow2(e), q) > x) {
        --q;
    }
    return q;
}

// The smallest plane at or above x.
uint quantize_high(float origin, int e, float x) {
    precise float scaled = (x - origin) * pow2(-e);
    uint q = uint(clamp(ceil(scaled), 0.0, 255.0));
    while (q < 255u && decode_plane(origin, pow2(e), q) < x) {
        ++q;
    }
    return q;
}

// The slots of the node being made: its children's references (INVALID_CHILD past the
// last) and boxes. Every loop over them is unrolled, so they stay in registers.
uint slot_ref[WIDE_WIDTH];
vec3 slot_lo[WIDE_WIDTH];
vec3 slot_hi[WIDE_WIDTH];
uint slot_count;

void set_slot(uint at, uint ref, vec3 lo, vec3 hi) {
    slot_ref[at] = ref;
    slot_lo[at] = lo;
    slot_hi[at] = hi;
}

// The slots of the wide node made from binary node x, by greedy expansion; returns the
// triangles below x.
uint expand(uint x) {
    BvhNodes nodes = BvhNodes(pc.nodes_address);
    BvhNode node = nodes.v[x];
    [[unroll]] for (uint j = 2u; j < WIDE_WIDTH; ++j) {
        slot_ref[j] = INVALID_CHILD;
    }
    set_slot(0u, node.left, node.left_lo, node.left_hi);
    set_slot(1u, node.right, node.right_lo, node.right_hi);
    slot_count = node.right == INVALID_CHILD ? 1u : 2u;
    // Each opening adds a slot: six fill all eight.
    for (uint opening = 0u; opening < WIDE_WIDTH - 2u; ++opening) {
        uint widest = WIDE_WIDTH;
        uint widest_ref = 0u;
        float widest_size = 0.0;
        [[unroll]] for (uint j = 0u; j < WIDE_WIDTH; ++j) {
            if (is_internal(slot_ref[j])) {
                float size = half_perimeter(slot_lo[j], slot_hi[j]);
                if (widest == WIDE_WIDTH || size > widest_size) {
                    widest = j;
                    widest_ref = slot_ref[j];
                    widest_size = size;
                }
            }
        }
        if (widest == WIDE_WIDTH) {
            break;
        }
        BvhNode opened = nodes.v[widest_ref];
        [[unroll]] for (uint j = 0u; j < WIDE_WIDTH; ++j) {
            if (j == widest) {
                set_slot(j, opened.left, opened.left_lo, opened.left_hi);
            } else if (j == slot_count) {
                set_slot(j, opened.right, opened.right_lo, opened.right_hi);
            }
        }
        ++slot_count;
    }
    return node.leaf_count;
}

// The node over the current slots, quantized in the frame of their union.
WideNode encode(uint child_base, uint triangle_base, uint leaf_count) {
    vec3 lo = vec3(INF);
    vec3 hi = vec3(-INF);
    [[unroll]] for (uint j = 0u; j < WIDE_WIDTH; ++j) {
        if (j < slot_count) {
            lo = min(lo, slot_lo[j]);
            hi = max(hi, slot_hi[j]);
        }
    }
    WideNode node;
    node.origin = lo;
    node.child_base = child_base;
    node.triangle_base = triangle_base;
    node.leaf_mask = 0u;
    node.leaf_count = leaf_count;
    [[unroll]] for (uint w = 0u; w < 12u; ++w) {
        node.planes[w] = 0u;
    }
    ivec3 e;
    uint exponents = 0u;
    [[unroll]] for (uint k = 0u; k < 3u; ++k) {
        e[k] = step_exponent(lo[k], hi[k]);
        exponents |= uint(e[k] + 127) << (8u * k);
    }
    [[unroll]] for (uint j = 0u; j < WIDE_WIDTH; ++j) {
        if (j >= slot_count) {
            continue;
        }
        if (is_internal(slot_ref[j])) {
            exponents |= 1u << (24u + j);
        } else {
            node.leaf_mask |= 1u << j;
        }
        uint shift = 8u * (j % 4u);
        [[unroll]] for (uint k = 0u; k < 3u; ++k) {
            node.planes[2u * k + j / 4u] |= quantize_low(lo[k], e[k], slot_lo[j][k]) << shift;
            node.planes[2u * (3u + k) + j / 4u] |= quantize_high(lo[k], e[k], slot_hi[j][k]) << shift;
        }
    }
    node.exponents_internal = exponents;
    return node;
}

void main() {
    Tasks tasks = Tasks(pc.tasks_address);
    CoherentU32s queue = CoherentU32s(pc.queue_address);
    // Tickets in arrival order, one atomic per subgroup.
    uvec4 lanes = subgroupBallot(true);
    uint first_ticket = 0u;
    if (subgroupElect()) {
        first_ticket = atomicAdd(queue.v[QUEUE_TICKETS], subgroupBallotBitCount(lanes));
    }
    uint task = subgroupBroadcastFirst(first_ticket) + subgroupBallotExclusiveBitCount(lanes);
    bool waiting = task < pc.task_capacity;
    uint spins = 0u;
    uint internal = 0u;
    uint child_base = 0u;
    while (WORKGROUP_LOOP ? workgroup_any(waiting) : subgroupAny(waiting)) {
        bool ready = waiting && (task == 0u || tasks.v[task].x != NO_TASK);
        // The task's y is read after its publication was seen. (Barriers in divergent code
        // where the loop is per subgroup; uniform where it is per workgroup.)
        if (WORKGROUP_LOOP || ready) {
            memoryBarrierBuffer();
        }
        if (ready) {
            uvec2 entry = task == 0u ? uvec2(0u) : tasks.v[task];
            uint stack_above = entry.y & 0xffffu;
            uint depth = entry.y >> 16;
            uint leaf_count = expand(entry.x);
            internal = 0u;
            [[unroll]] for (uint j = 0u; j < WIDE_WIDTH; ++j) {
                internal += is_internal(slot_ref[j]) ? 1u : 0u;
            }
            uint leaves = slot_count - internal;
            // Consecutive nodes and triangles, one atomic each per subgroup.
            uint node_offset = subgroupExclusiveAdd(internal);
            uint node_total = subgroupAdd(internal);
            uint triangle_offset = subgroupExclusiveAdd(leaves);
            uint triangle_total = subgroupAdd(leaves);
            // k children allocated and this node made: counted before the children are
            // published, so that no child's making brings the count to zero first.
            uint outstanding_change = subgroupAdd(internal - 1u);
            uvec2 bases = uvec2(0u);
            if (subgroupElect()) {
                bases.x = node_total > 0u ? atomicAdd(queue.v[QUEUE_NODES], node_total) : 0u;
                bases.y = triangle_total > 0u ? atomicAdd(queue.v[QUEUE_TRIANGLES], triangle_total) : 0u;
                atomicAdd(queue.v[QUEUE_OUTSTANDING], outstanding_change);
            }
            bases = subgroupBroadcastFirst(bases);
            child_base = internal > 0u ? bases.x + node_offset : 0u;
            uint triangle_base = leaves > 0u ? bases.y + triangle_offset : 0u;
            WideNodes(pc.wide_nodes_address).v[task] = encode(child_base, triangle_base, leaf_count);
            LeafTriangles leaf_triangles = LeafTriangles(pc.leaf_triangles_address);
            LeafTriangles wide_triangles = LeafTriangles(pc.wide_triangles_address);
            uint leaf_rank = 0u;
            uint child = child_base;
            uint child_entry = min(stack_above + internal - 1u, 0xffffu) | (min(depth + 1u, 0xffffu) << 16);
            [[unroll]] for (uint j = 0u; j < WIDE_WIDTH; ++j) {
                if (is_internal(slot_ref[j])) {
                    tasks.v[child++].y = child_entry;
                } else if (j < slot_count) {
                    wide_triangles.v[triangle_base + leaf_rank++] = leaf_triangles.v[slot_ref[j] & ~LEAF_BIT];
                }
            }
            uint need = subgroupMax(internal > 0u ? stack_above + internal : 0u);
            uint height = subgroupMax(depth + 1u);
            if (subgroupElect()) {
                atomicMax(queue.v[QUEUE_STACK_NEED], need);
                atomicMax(queue.v[QUEUE_HEIGHT], height);
            }
        }
        // The children's y and the node are written before the children are published.
        if (WORKGROUP_LOOP || ready) {
            memoryBarrierBuffer();
        }
        if (ready) {
            uint child = child_base;
            [[unroll]] for (uint j = 0u; j < WIDE_WIDTH; ++j) {
                if (is_internal(slot_ref[j])) {
                    atomicExchange(tasks.v[child++].x, slot_ref[j]);
                }
            }
            if (task != 0u) {
                tasks.v[task].x = NO_TASK;
            }
            waiting = false;
        }
        // Stop when every allocated node is made (this task will never come), or give the
        // wait up (the host then sees the tree incomplete). One read per subgroup.
        bool idle = waiting && !ready;
        uint outstanding = 1u;
        if (subgroupElect()) {
            outstanding = queue.v[QUEUE_OUTSTANDING];
        }
        outstanding = subgroupBroadcastFirst(outstanding);
        if (idle && (outstanding == 0u || ++spins == SPIN_LIMIT)) {
            waiting = false;
        }
    }
    barrier();
    // The last workgroup out hands the figures to the host and resets the queue.
    memoryBarrierBuffer();
    uint workgroups = gl_NumWorkGroups.x * gl_NumWorkGroups.y * gl_NumWorkGroups.z;
    if (gl_LocalInvocationIndex == 0u &&
        atomicAdd(queue.v[QUEUE_EXITED], 1u) == workgroups - 1u) {
        U32s stats = U32s(pc.stats_address);
        stats.v[0] = atomicExchange(queue.v[QUEUE_NODES], 1u);
        stats.v[1] = atomicExchange(queue.v[QUEUE_STACK_NEED], 0u);
        stats.v[2] = atomicExchange(queue.v[QUEUE_HEIGHT], 0u);
        stats.v[3] = atomicExchange(queue.v[QUEUE_OUTSTANDING], 1u);
        atomicExchange(queue.v[QUEUE_TICKETS], 0u);
        atomicExchange(queue.v[QUEUE_TRIANGLES], 0u);
        atomicExchange(queue.v[QUEUE_EXITED], 0u);
    }
}
