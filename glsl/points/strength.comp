#version 460
// The deformation strength of point-cloud editing (seed 000 §6, after Pauly et al. 2003), one
// invocation per point: from its distance d_a to the active handle's nearest point and d_s to
// the static handles' (knn.comp's nearest-neighbour answers against the two handle trees, as
// squared distances; none static: infinitely far), t = beta(d_s / (d_s + d_a)) with the
// smooth falloff beta(x) = x^2 (3 - 2x): 1 on the active handle, 0 on a static one (which wins
// where a point is on both), easing in between. src/points/cpu.rs computes the same.
#include "../common/prelude.glsl"
#include "../common/geometry.glsl"

layout(push_constant, scalar) uniform Push {
    uint64_t active_address;  // squared distance per point to the active handle
    uint64_t static_address;  // squared distance per point to the static handles, or 0
    uint64_t out_address;     // out: strength per point
    uint count;
    uint pad;
} pc;

void main() {
    uint i = flat_workgroup_id() * WORKGROUP_SIZE + gl_LocalInvocationIndex;
    if (i >= pc.count) {
        return;
    }
    float to_active = sqrt(F32s(pc.active_address).v[i]);
    float to_static = pc.static_address != 0ul ? sqrt(F32s(pc.static_address).v[i]) : INF;
    float x = 0.0;
    if (to_static == INF) {
        x = 1.0;
    } else if (to_static > 0.0) {
        x = to_static / (to_static + to_active);
    }
    F32s(pc.out_address).v[i] = x * x * (3.0 - 2.0 * x);
}
