#version 460
// Consistent orientation of a cloud's normals (Hoppe et al. 1992; seed 000 §6 does it on the
// CPU) by a minimum spanning forest of the neighbour graph, grown on the GPU by Borůvka's
// algorithm, the sign of every normal carried along as a parity so no tree walk is needed.
//
// The graph joins each point to its k nearest (knn.comp's lists). An edge compares its normals
// without their components along it (across a curved or thin part normals turn along the
// edge): s = n_v . n_u - (n_v . d)(n_u . d) / (d . d), d = p_u - p_v, the mean of Hoppe's
// n_v . n_u and König and Gumhold's mirrored normals. It weighs 1 - |s| and
// edges are ordered by (weight bits, v * k + slot), a total order, so the
// forest is unique (src/points/cpu.rs orient_normals grows the same one by Kruskal's
// algorithm). Each point keeps its component's representative and its parity: whether its
// normal must flip relative to the representative's. An edge asks its endpoints to disagree
// (parity 1) when their normals point away from each other (s < 0). One Borůvka round:
//   EDGES    each point offers each edge leaving its component to both components'
//            lightest-edge slot (64-bit atomicMin of the packed order), reading the weights
//            WEIGHTS stored once before the rounds (in edge order, so the reads coalesce);
//   HOOK     each representative with an edge hooks onto the other side's representative,
//            with the parity between the two;
//   CYCLES   two representatives that chose the same edge hook onto each other: the lower
//            one stays a representative;
//   FLATTEN  each point follows the hooks to its new representative, adding up parities,
//            and clears the slots for the next round.
// A round that hooks nothing ends the work (the later rounds return at once). Then each
// component's sign is chosen at its extreme points, where a closed surface's outward normal is
// the axis itself: for each axis (pc.round: 0 x, 1 y, 2 z) in turn,
//   EXTREMES each component finds its highest and lowest point along the axis (then the lowest
//            index);
//   SIGN     each representative weighs the two: the one whose normal lies nearest the axis
//            (largest |n[axis]|, the first found on a tie, over all axes along which the
//            component is not flat) decides its flip, so that this normal points away from
//            the component (+axis at the highest point, -axis at the lowest); a component
//            flat along every axis (one point) keeps its representative's sign;
// and then
//   APPLY    each normal flips by its parity and its representative's, and the flips are
//            counted.
// PCA normals at thin tips (a bunny's ears) lie across the axis, so no single extreme decides
// well everywhere; the best-aligned of the six does.
// INIT sets every point up as its own component; WEIGHTS stores each edge's weight with the
// sign bit set where its normals point away.
#include "../common/prelude.glsl"
#include "../common/geometry.glsl"

layout(constant_id = 2) const uint STEP = 0;
const uint INIT = 0;
const uint WEIGHTS = 1;
const uint EDGES = 2;
const uint HOOK = 3;
const uint CYCLES = 4;
const uint FLATTEN = 5;
const uint EXTREMES = 6;
const uint SIGN = 7;
const uint APPLY = 8;

const uint MISS = 0xffffffffu;
const uint64_t NO_EDGE = 0xfffffffffffffffful;
const uint MAX_ROUNDS = 32;

// The work done (src/points/orient.rs OrientStats).
struct OrientStats {
    uint hooks[MAX_ROUNDS]; // hooks that became forest edges, per round
    uint flipped;           // normals flipped by APPLY
    uint pad;
};
layout(buffer_reference, scalar, buffer_reference_align = 4) buffer OrientStatsBuffer { OrientStats s; };
layout(buffer_reference, scalar, buffer_reference_align = 16) buffer Vec4s { vec4 v[]; };

layout(push_constant, scalar) uniform Push {
    uint64_t positions_address;  // vec3 per point
    uint64_t normals_address;    // vec4 per point: normal (oriented in place), density
    uint64_t ids_address;        // k neighbour indices per point (MISS past the last)
    uint64_t weights_address;    // uint per edge (v * k + slot): its weight's bits, the sign
                                 // bit set where the normals point away
    uint64_t component_address;  // uint per point: its component's representative
    uint64_t parity_address;     // uint per point: flip relative to the representative
    uint64_t parent_address;     // uint per representative: what it hooked onto (itself)
    uint64_t link_address;       // uint per representative: the parity of its hook (SIGN:
                                 // its flip; parent_address then holds the deciding normal's
                                 // |n[axis]| as float bits)
    uint64_t lightest_address;   // uint64 per representative: its lightest edge this round
                                 // (EXTREMES: its lowest point)
    uint64_t top_address;        // uint64 per representative: its highest point
    uint64_t stats_address;      // OrientStats
    uint count;
    uint k;
    uint round;
    uint pad;
} pc;

U32s components() {
    return U32s(pc.component_address);
}

U32s parities() {
    return U32s(pc.parity_address);
}

U32s parents() {
    return U32s(pc.parent_address);
}

U64s lightest() {
    return U64s(pc.lightest_address);
}

vec3 normal(uint v) {
    return Vec4s(pc.normals_address).v[v].xyz;
}

vec3 position(uint v) {
    return Vec3s(pc.positions_address).v[v];
}

// The edge between points v and u: 1 - |s|, at least 0, and whether s < 0, in the order
// src/points/cpu.rs edge_weight computes them.
float edge_weight(uint v, uint u, out bool away) {
    vec3 a = normal(v), b = normal(u);
    precise vec3 d = position(u) - position(v);
    precise float dd = d.x * d.x + d.y * d.y + d.z * d.z;
    precise float s = a.x * b.x + a.y * b.y + a.z * b.z;
    if (dd > 0.0) {
        precise float ad = a.x * d.x + a.y * d.y + a.z * d.z;
        precise float bd = b.x * d.x + b.y * d.y + b.z * d.z;
        s = s - ad * bd / dd;
    }
    away = s < 0.0;
    precise float w = 1.0 - abs(s);
    return w <= 0.0 ? 0.0 : w;
}

// Whether the previous round hooked anything (round 0: yes).
bool still_merging() {
    return pc.round == 0 || OrientStatsBuffer(pc.stats_address).s.hooks[pc.round - 1] != 0;
}

void main() {
    uint v = flat_workgroup_id() * WORKGROUP_SIZE + gl_LocalInvocationIndex;
    if (v >= pc.count) {
        return;
    }
    if (STEP == INIT) {
        components().v[v] = v;
        parities().v[v] = 0;
        parents().v[v] = v;
        lightest().v[v] = NO_EDGE;
        U64s(pc.top_address).v[v] = 0;
    } else if (STEP == WEIGHTS) {
        for (uint j = 0; j < pc.k; ++j) {
            uint u = U32s(pc.ids_address).v[v * pc.k + j];
            if (u == MISS || u == v) {
                continue;
            }
            bool away;
            float w = edge_weight(v, u, away);
            U32s(pc.weights_address).v[v * pc.k + j] = floatBitsToUint(w) | (away ? 0x80000000u : 0u);
        }
    } else if (STEP == EDGES) {
        if (!still_merging()) {
            return;
        }
        uint cv = components().v[v];
        for (uint j = 0; j < pc.k; ++j) {
            uint u = U32s(pc.ids_address).v[v * pc.k + j];
            if (u == MISS || u == v) {
                continue;
            }
            uint cu = components().v[u];
            if (cu == cv) {
                continue;
            }
            uint w = U32s(pc.weights_address).v[v * pc.k + j] & 0x7fffffffu;
            uint64_t key = (uint64_t(w) << 32) | uint64_t(v * pc.k + j);
            atomicMin(lightest().v[cv], key);
            atomicMin(lightest().v[cu], key);
        }
    } else if (STEP == HOOK) {
        uint64_t key = lightest().v[v];
        if (!still_merging() || components().v[v] != v || key == NO_EDGE) {
            return;
        }
        uint edge = uint(key & 0xffffffffu);
        uint a = edge / pc.k;
        uint b = U32s(pc.ids_address).v[edge];
        uint ca = components().v[a];
        uint away = U32s(pc.weights_address).v[edge] >> 31;
        parents().v[v] = ca == v ? components().v[b] : ca;
        U32s(pc.link_address).v[v] = away ^ parities().v[a] ^ parities().v[b];
    } else if (STEP == CYCLES) {
        if (!still_merging() || components().v[v] != v || lightest().v[v] == NO_EDGE) {
            return;
        }
        uint other = parents().v[v];
        bool stays = parents().v[other] == v && v < other;
        if (stays) {
            parents().v[v] = v;
        }
        uint hooked = subgroupAdd(stays ? 0u : 1u);
        if (subgroupElect()) {
            atomicAdd(OrientStatsBuffer(pc.stats_address).s.hooks[pc.round], hooked);
        }
    } else if (STEP == FLATTEN) {
        if (!still_merging()) {
            return;
        }
        uint c = components().v[v];
        uint parity = parities().v[v];
        uint up = parents().v[c];
        while (up != c) {
            parity ^= U32s(pc.link_address).v[c];
            c = up;
            up = parents().v[c];
        }
        components().v[v] = c;
        parities().v[v] = parity;
        lightest().v[v] = NO_EDGE;
    } else if (STEP == EXTREMES) {
        float x = Vec3s(pc.positions_address).v[v][pc.round];
        uint ordered = float_to_ordered(floatBitsToUint(x == 0.0 ? 0.0 : x));
        uint c = components().v[v];
        atomicMax(U64s(pc.top_address).v[c], (uint64_t(ordered) << 32) | uint64_t(~v));
        atomicMin(lightest().v[c], (uint64_t(ordered) << 32) | uint64_t(v));
    } else if (STEP == SIGN) {
        if (components().v[v] != v) {
            return;
        }
        uint axis = pc.round;
        uint64_t highest = U64s(pc.top_address).v[v];
        uint64_t lowest = lightest().v[v];
        uint top = ~uint(highest & 0xffffffffu);
        uint bottom = uint(lowest & 0xffffffffu);
        float best = axis == 0 ? -1.0 : uintBitsToFloat(parents().v[v]);
        uint flip = axis == 0 ? 0 : U32s(pc.link_address).v[v];
        // A component flat across the axis has no outside along it.
        bool extent = (highest >> 32) > (lowest >> 32);
        float up = normal(top)[axis];
        if (extent && abs(up) > best) {
            best = abs(up);
            flip = parities().v[top] ^ uint(up < 0.0);
        }
        float down = normal(bottom)[axis];
        if (extent && abs(down) > best) {
            best = abs(down);
            flip = parities().v[bottom] ^ uint(down > 0.0);
        }
        parents().v[v] = floatBitsToUint(best);
        U32s(pc.link_address).v[v] = flip;
        // The slots start over for the next axis.
        U64s(pc.top_address).v[v] = 0;
        lightest().v[v] = NO_EDGE;
    } else if (STEP == APPLY) {
        uint c = components().v[v];
        bool flip = (parities().v[v] ^ U32s(pc.link_address).v[c]) != 0u;
        if (flip) {
            Vec4s normals = Vec4s(pc.normals_address);
            normals.v[v].xyz = -normals.v[v].xyz;
        }
        uint flipped = subgroupAdd(flip ? 1u : 0u);
        if (subgroupElect()) {
            atomicAdd(OrientStatsBuffer(pc.stats_address).s.flipped, flipped);
        }
    }
}
